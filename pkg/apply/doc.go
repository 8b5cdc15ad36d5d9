// Package apply installs rendered units on a node: it computes a plan (the
// files to write or remove and the systemd actions that follow), prints it,
// and carries it out with atomic writes and a single daemon-reload, touching
// only the files it owns.
package apply
