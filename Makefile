# hostprov: the commands a developer and CI use. `make test` is what CI runs.
GO ?= go
BIN ?= bin/hostprov
# How long `make fuzz` runs each fuzz target: a duration (30s) or a number
# of inputs (5000x); FUZZMINIMIZE bounds the minimizing of each new input.
FUZZTIME ?= 30s
FUZZMINIMIZE ?= 60s

.PHONY: build image test vm-test test-bins bench bench-butane bench-fleet crash lint fuzz golden generate tools package clean

build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/hostprov

# The container image (OCI image index, linux/amd64 and linux/arm64) as
# an OCI layout in dist/oci, tagged $(VERSION), and as an OCI archive in
# dist/hostprov.oci.tar; no container daemon needed. VERSION is stamped
# into the binary and the labels; it is the VERSION file's, as the
# packages' (make image VERSION=v1.2.3 overrides it). The creation time is
# the commit's (SOURCE_DATE_EPOCH), not the clock, so one commit gives one
# digest.
VERSION ?= $(shell cat VERSION)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

image:
	$(GO) run ./internal/cmd/image -version '$(VERSION)' -revision '$(REVISION)' -created '$(SOURCE_DATE_EPOCH)' -out dist

# The whole suite. Tests that need root or a real tool skip on a laptop
# and must run (and fail if they cannot) when CI=true; testsummary ends the
# run with one line on what was skipped and how to run it, and the counts.
# -tags kube: the agent's and controller's commands, which the node's
# build leaves out (internal/cli/kube_off.go), are tested too.
#
# Everything here is built as the node's and the image's binaries are
# (CGO_ENABLED=0, -trimpath), so that go vet, the test binaries, the
# binaries of test-bins and the builds inside TestImage and TestPackages
# share one compile of every package: from an empty build cache, compiling
# the Kubernetes libraries once more for each set of flags was most of a
# run's time. -timeout: a package's tests, not a compile (test-bins has
# built what the tests run); go test's default of 10 minutes is too short
# for pkg/apply's rig tests on a loaded two-core machine.
TEST_FLAGS = CGO_ENABLED=0 GOFLAGS='-trimpath $(GOFLAGS)'
TEST_BIN = $(CURDIR)/bin/test
test: lint test-bins
	$(TEST_FLAGS) HOSTPROV_TEST_BIN_DIR=$(TEST_BIN) $(GO) run ./internal/cmd/testsummary \
	  -skipped $(TEST_BIN)/skipped.txt -tags kube -count=1 -timeout 30m ./...

# The hostprov binaries the tests run (internal/testbin), each built once
# per run: the node's build, the image's (kube) and the crash tests'
# (killpoints). The arm64 build is not kept: it compiles every package for
# arm64 once, so that TestImage and TestPackages, which cross-compile in
# parallel, only link.
test-bins:
	$(TEST_FLAGS) $(GO) build -o $(TEST_BIN)/hostprov ./cmd/hostprov
	$(TEST_FLAGS) $(GO) build -tags kube -o $(TEST_BIN)/hostprov-kube ./cmd/hostprov
	$(TEST_FLAGS) $(GO) build -tags killpoints -o $(TEST_BIN)/hostprov-killpoints ./cmd/hostprov
	$(TEST_FLAGS) GOARCH=arm64 $(GO) build -tags kube -o /dev/null ./cmd/hostprov

# The node packages: hostprov_VERSION_ARCH.deb and hostprov-VERSION.ARCH.rpm
# for amd64 and arm64 in dist/, at the version of the VERSION file, built by
# internal/cmd/package with nfpm as a library. They are dated
# SOURCE_DATE_EPOCH, the commit's date as for the image, so one commit
# packages to the same bytes. MAINTAINER ("Name <address>") names who ships
# them, and is required: the repository records no address of its own.
MAINTAINER ?=
package:
	SOURCE_DATE_EPOCH='$(SOURCE_DATE_EPOCH)' $(GO) run ./internal/cmd/package -out dist -maintainer "$(MAINTAINER)"

# hostprov's examples booted in a Debian 12 VM (internal/vmtest, behind the
# vmtest build tag so that `make test` leaves it out): as cloud-init user
# data and as the node package, each booted twice, checked from inside the
# guest. Needs root and what .ci/setup installs (qemu, mmdebstrap, ...);
# the guest image is built once and cached (VMTEST_CACHE). It prints each
# check's PASS or FAIL and the timings. See docs/vm-test.md.
vm-test:
	$(TEST_FLAGS) $(GO) test -tags vmtest -count=1 -v -timeout 120m -run TestVM ./internal/vmtest

# Speed and memory, as Go benchmarks (never as timed assertions in tests).
# BenchmarkApplyRig (as root) runs the kops/cloud-init shell loop over 1,000
# units, which alone takes ten minutes or more: hence the long timeout.
bench:
	$(GO) test -tags kube -run '^$$' -bench . -benchmem -timeout 90m ./...

# hostprov against Butane's library, whole process against whole process:
# `hostprov render` to Ignition, cloud-init and Butane and `hostprov
# validate` of a spec of BENCH_HOOKS hooks, and Butane translating the same
# units to Ignition, each run BENCH_RUNS times in turns; it prints CPU
# time, peak RSS and allocations (median and range) and the ratios beside
# their goals. See internal/cmd/benchbutane.
BENCH_HOOKS ?= 1000,10000
BENCH_RUNS ?= 5
bench-butane:
	$(GO) build -o bin/benchbutane ./internal/cmd/benchbutane
	bin/benchbutane -n '$(BENCH_HOOKS)' -runs $(BENCH_RUNS)

# hostprov on Kubernetes at fleet scale, on production's API path: the
# controller (the hostprov binary in its own process: its own token,
# leader election, the webhook) and agents (each its own pod-bound token,
# held by the admission policies; fake systemd, real watches and clients;
# all in the benchmark's process, at a lower CPU priority) against a real
# API server and etcd with deploy/ installed (make tools builds
# kube-apiserver; etcd is Debian's etcd-server), for each fleet size of
# FLEET_NODES (comma-separated). It prints the time from a HostHooks
# change to its aggregated Complete status, API requests per node per
# change, webhook calls, policy denials, lease renewals, the request rate
# at rest, peak memory and the machine's load. See BenchmarkFleet. The
# default is 1,000 nodes (about a minute); FLEET_NODES=1000,10000 also
# runs 10,000, which takes some 25 minutes and 13 GB on 2 cores
# (docs/kubernetes.md, Scale).
FLEET_NODES ?= 1000
bench-fleet:
	HOSTPROV_FLEET_NODES=$(FLEET_NODES) $(GO) test -run '^$$' -bench '^BenchmarkFleet$$' -benchtime 1x -timeout 120m -v ./internal/kube/e2e

# A crash campaign against a real systemd (as root): the kill-point test
# (every file step and systemd call of an apply in turn) and CRASH_KILLS
# applies killed at random points, each followed by an apply that must
# converge. make test runs both with 30 random kills.
CRASH_KILLS ?= 300
crash:
	HOSTPROV_CRASH_KILLS=$(CRASH_KILLS) CI=true $(GO) test -count=1 -v -run '^(TestRigKillPoints|TestRigCrash)$$' -timeout 60m ./pkg/apply

lint:
	$(TEST_FLAGS) $(GO) vet ./...
	$(TEST_FLAGS) $(GO) vet -tags kube ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Each fuzz target runs for FUZZTIME; .ci/run runs them briefly. The targets
# are found in the test sources, so no package is built just to list them.
fuzz:
	@grep -l '^func Fuzz' $$(git ls-files '*_test.go') | xargs -n1 dirname | sort -u | while read -r dir; do \
	  for f in $$(grep -h -o '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go | sed 's/^func //'); do \
	    echo "fuzz ./$$dir $$f ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./$$dir || exit 1; \
	  done; \
	done

# Regenerate the golden files; review the diff before committing.
golden:
	$(GO) test -tags kube ./... -update

# The generated files: the Kubernetes API's deep-copy functions and the CRD
# manifests in deploy/crds, from the Go types in pkg/apis by controller-gen;
# and docs/cli.md, the command-line reference, from the command tree of the
# build with the Kubernetes commands (internal/gen/clidoc; built as make
# test builds, to share its compile). Run it after changing those types or
# a command's help or flags, and commit what it writes (internal/clidoc's
# test fails while docs/cli.md is out of date).
CONTROLLER_GEN ?= sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
generate:
	$(GO) run $(CONTROLLER_GEN) object paths=./pkg/apis/...
	$(GO) run $(CONTROLLER_GEN) crd paths=./pkg/apis/... output:crd:artifacts:config=deploy/crds
	$(TEST_FLAGS) $(GO) run -tags kube ./internal/gen/clidoc -o docs/cli.md

# Real tools the tests check hostprov's output with that Debian does not
# package, built from their own sources into $(TOOLS) (under bin/, never
# committed). Fast when they are built already: it checks the version the
# binary reports. The tests find them there, or on PATH.
#
# ignition-apply is Ignition's own apply tool (the files stage of Ignition,
# run on a directory). Its one binary picks its tool by argv[0], so it is
# installed under that name. It links libblkid through cgo: .ci/setup
# installs libblkid-dev and gcc.
#
# kube-apiserver is the API server the Kubernetes tests run against (with
# Debian's etcd, etcd-server). It is built from k8s.io/kubernetes at
# KUBE_VERSION as pinned by the module in tools/kube-apiserver (go.mod
# replaces every staging module with its release); the version is stamped
# in as the release build does, so the check below can read it back.
# KUBE_VERSION must be the version that go.mod requires. A cold build takes
# several minutes.
TOOLS ?= bin/tools
IGNITION_VERSION ?= v2.24.0
IGNITION_MAIN = github.com/coreos/ignition/v2/internal
KUBE_VERSION ?= v1.37.2
KUBE_VERSION_PKG = k8s.io/component-base/version
KUBE_VERSION_PARTS = $(subst ., ,$(patsubst v%,%,$(KUBE_VERSION)))

tools:
	@if [ "$$($(TOOLS)/ignition-apply --version 2>/dev/null)" = "Ignition $(IGNITION_VERSION)" ]; then \
	  echo "tools: $(TOOLS)/ignition-apply is Ignition $(IGNITION_VERSION) already"; \
	else \
	  echo "tools: building $(TOOLS)/ignition-apply from $(IGNITION_MAIN)@$(IGNITION_VERSION)"; \
	  mkdir -p $(TOOLS) && tmp=$$(mktemp -d $(abspath $(TOOLS))/.build.XXXXXX) && trap 'rm -rf "$$tmp"' EXIT && \
	  CGO_ENABLED=1 GOBIN="$$tmp" $(GO) install \
	    -ldflags "-X $(IGNITION_MAIN)/version.Raw=$(IGNITION_VERSION)" $(IGNITION_MAIN)@$(IGNITION_VERSION) && \
	  mv -f "$$tmp/internal" $(TOOLS)/ignition-apply && \
	  $(TOOLS)/ignition-apply --version; \
	fi
	@if [ "$$($(TOOLS)/kube-apiserver --version 2>/dev/null)" = "Kubernetes $(KUBE_VERSION)" ]; then \
	  echo "tools: $(TOOLS)/kube-apiserver is Kubernetes $(KUBE_VERSION) already"; \
	else \
	  echo "tools: building $(TOOLS)/kube-apiserver from k8s.io/kubernetes@$(KUBE_VERSION) (tools/kube-apiserver)"; \
	  mkdir -p $(TOOLS) && tmp=$$(mktemp -d $(abspath $(TOOLS))/.build.XXXXXX) && trap 'rm -rf "$$tmp"' EXIT && \
	  $(GO) -C tools/kube-apiserver build -o "$$tmp/kube-apiserver" -ldflags " \
	    -X $(KUBE_VERSION_PKG).gitVersion=$(KUBE_VERSION) \
	    -X $(KUBE_VERSION_PKG).gitMajor=$(word 1,$(KUBE_VERSION_PARTS)) \
	    -X $(KUBE_VERSION_PKG).gitMinor=$(word 2,$(KUBE_VERSION_PARTS)) \
	    -X $(KUBE_VERSION_PKG).gitTreeState=clean" \
	    k8s.io/kubernetes/cmd/kube-apiserver && \
	  mv -f "$$tmp/kube-apiserver" $(TOOLS)/kube-apiserver && \
	  $(TOOLS)/kube-apiserver --version; \
	fi

clean:
	rm -rf bin dist
