// Package vmtest boots hostprov's examples in a Debian 12 virtual machine
// and checks, from inside the booted guest, that they come up provisioned
// and stay so after a reboot: the proof on a real kernel (block devices,
// swap, the network coming up during boot, cloud-init's stages) that the
// namespace rig of the other tests cannot give.
//
// Its test is behind the vmtest build tag, so that `make test` neither
// builds nor runs it: `make vm-test` does (docs/vm-test.md).
package vmtest
