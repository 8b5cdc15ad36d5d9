package importer

import (
	"strings"
	"testing"
)

// TestButaneRest: the Ignition leftovers of a Butane config are written
// as a Butane config of its variant and version, keys in Butane's
// snake_case (sizeMiB as size_mib), which Butane translates to the same
// leftovers; what Butane of that version cannot say (kernel arguments
// before fcos 1.4.0) is refused, and import keeps the Ignition leftovers
// then.
func TestButaneRest(t *testing.T) {
	ign := []byte(`{"ignition": {"version": "3.4.0"}, "kernelArguments": {"shouldExist": ["quiet"]},
  "storage": {"disks": [{"device": "/dev/vdb", "wipeTable": true, "partitions": [{"label": "data", "sizeMiB": 1024, "typeGuid": "0FC63DAF-8483-4772-8E79-3D69D8477DE4"}]}]}}`)
	bu, ok := butaneRest(ign, "fcos", "1.5.0")
	if !ok {
		t.Fatal("Butane fcos 1.5.0 does not give the leftovers back")
	}
	for _, want := range []string{"variant: fcos\n", "version: 1.5.0\n", "kernel_arguments:", "should_exist:", "wipe_table: true", "size_mib: 1024", "type_guid: "} {
		if !strings.Contains(string(bu), want) {
			t.Errorf("the Butane leftovers lack %q:\n%s", want, bu)
		}
	}
	if bu, ok := butaneRest(ign, "fcos", "1.0.0"); ok {
		t.Errorf("fcos 1.0.0, which has no kernel_arguments, took the leftovers:\n%s", bu)
	}
}
