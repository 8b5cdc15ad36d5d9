//go:build tools

// Package tools pins the kube-apiserver that the Kubernetes tests run.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
