package render

import (
	"errors"
	"fmt"
)

// MergeFile is a config of the user's to merge into an output
// (render --merge FILE): its name for messages, its bytes, and the
// directory that local: references of a Butane config are read from (the
// file's own directory).
type MergeFile struct {
	Name string
	Data []byte
	Dir  string
}

// errKopsMerge is why --merge is refused for kops hooks.
var errKopsMerge = errors.New("--merge is not for --format kops: kops hooks are a list of units in a cluster spec, with no place for a config of your own " +
	"(files, users, packages); keep those in the instance group's own additionalUserData, or render --format ignition, butane or cloud-init")

// CheckMerge reports whether --merge can be used with the output format
// named format: nil for ignition, butane and cloud-init, an error saying
// why not for every other.
func CheckMerge(format string) error {
	switch format {
	case "ignition", "butane", "cloud-init":
		return nil
	case "kops":
		return errKopsMerge
	}
	return fmt.Errorf("--merge is only for --format ignition, butane or cloud-init: --format %s is not instance user data", format)
}
