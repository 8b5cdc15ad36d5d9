package units

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/internal/hosttools"
)

// interactionCases are small units in which a plain sort by key would change
// what systemd loads; each keeps the order it must keep. The rig test loads
// every one of them into a real systemd, as written and as formatted.
var interactionCases = []struct {
	// Name, In and Want are exported for the rig test in units_test.
	Name, In, Want string
}{
	{"stdin buffer", "[Service]\nStandardInputText=a\nStandardInputData=Yg==\nStandardInputText=c\nExecStart=/bin/cat\nStandardInput=data\n",
		"[Service]\nExecStart=/bin/cat\nStandardInput=data\nStandardInputText=a\nStandardInputData=Yg==\nStandardInputText=c\n"},
	{"listen order", "[Socket]\nListenStream=/run/x.stream\nListenDatagram=/run/x.dgram\nListenFIFO=/run/x.fifo\nAccept=no\n",
		"[Socket]\nAccept=no\nListenStream=/run/x.stream\nListenDatagram=/run/x.dgram\nListenFIFO=/run/x.fifo\n"},
	{"listen reset", "[Socket]\nListenStream=/run/a\nListenDatagram=\nListenStream=/run/b\n",
		"[Socket]\nListenStream=/run/a\nListenDatagram=\nListenStream=/run/b\n"},
	{"condition reset", "[Unit]\nConditionPathExists=/x\nConditionFileNotEmpty=\nAssertPathExists=/y\nAssertFileNotEmpty=\nDescription=d\n",
		"[Unit]\nAssertPathExists=/y\nAssertFileNotEmpty=\nConditionPathExists=/x\nConditionFileNotEmpty=\nDescription=d\n"},
	{"condition order", "[Unit]\nConditionVirtualization=!container\nConditionArchitecture=x86-64\nConditionACPower=true\n",
		"[Unit]\nConditionVirtualization=!container\nConditionArchitecture=x86-64\nConditionACPower=true\n"},
	{"timer values", "[Timer]\nOnCalendar=daily\nOnBootSec=\nOnUnitActiveSec=1h\nAccuracySec=1s\n",
		"[Timer]\nAccuracySec=1s\nOnCalendar=daily\nOnBootSec=\nOnUnitActiveSec=1h\n"},
	{"path watches", "[Path]\nPathExists=/a\nPathChanged=\nPathModified=/b\nDirectoryNotEmpty=/c\n",
		"[Path]\nPathExists=/a\nPathChanged=\nPathModified=/b\nDirectoryNotEmpty=/c\n"},
	{"credentials", "[Service]\nLoadCredentialEncrypted=a:/a\nLoadCredential=b:/b\nSetCredentialEncrypted=c:Yw==\nSetCredential=d:d\nExecStart=/bin/true\n",
		"[Service]\nExecStart=/bin/true\nLoadCredentialEncrypted=a:/a\nLoadCredential=b:/b\nSetCredentialEncrypted=c:Yw==\nSetCredential=d:d\n"},
	{"bind mounts", "[Service]\nBindReadOnlyPaths=/a\nBindPaths=/b\nExecStart=/bin/true\n",
		"[Service]\nBindReadOnlyPaths=/a\nBindPaths=/b\nExecStart=/bin/true\n"},
	{"legacy path keys", "[Service]\nReadWritePaths=/a\nReadWriteDirectories=\nReadOnlyPaths=/b\nReadOnlyDirectories=\nInaccessiblePaths=/c\nInaccessibleDirectories=\nExecStart=/bin/true\n",
		"[Service]\nExecStart=/bin/true\nInaccessiblePaths=/c\nInaccessibleDirectories=\nReadOnlyPaths=/b\nReadOnlyDirectories=\nReadWritePaths=/a\nReadWriteDirectories=\n"},
	{"timeouts", "[Service]\nTimeoutStopSec=5\nTimeoutSec=30\nTimeoutStartSec=7\nExecStart=/bin/true\n",
		"[Service]\nExecStart=/bin/true\nTimeoutStopSec=5\nTimeoutSec=30\nTimeoutStartSec=7\n"},
	{"aliases", "[Unit]\nStartLimitIntervalSec=5\nStartLimitInterval=7\nOnFailureJobMode=fail\nOnFailureIsolate=yes\nBindsTo=a.service\nBindTo=b.service\nJobTimeoutSec=5\nJobRunningTimeoutSec=9\n",
		"[Unit]\nBindsTo=a.service\nBindTo=b.service\nJobTimeoutSec=5\nJobRunningTimeoutSec=9\nOnFailureJobMode=fail\nOnFailureIsolate=yes\nStartLimitIntervalSec=5\nStartLimitInterval=7\n"},
	{"scheduling", "[Service]\nCPUSchedulingPriority=50\nCPUSchedulingPolicy=other\nIOSchedulingPriority=3\nIOSchedulingClass=idle\nSyslogLevel=debug\nSyslogFacility=local0\nExecStart=/bin/true\n",
		"[Service]\nCPUSchedulingPriority=50\nCPUSchedulingPolicy=other\nExecStart=/bin/true\nIOSchedulingPriority=3\nIOSchedulingClass=idle\nSyslogLevel=debug\nSyslogFacility=local0\n"},
	{"legacy section", "[Service]\nStartLimitBurst=3\nExecStart=/bin/true\n[Unit]\nStartLimitBurst=9\nDescription=d\n",
		"[Service]\nExecStart=/bin/true\nStartLimitBurst=3\n\n[Unit]\nDescription=d\nStartLimitBurst=9\n"},
	{"legacy section merged when in order", "[Unit]\nStartLimitBurst=9\n[Service]\nStartLimitBurst=3\nExecStart=/bin/true\n",
		"[Unit]\nStartLimitBurst=9\n\n[Service]\nExecStart=/bin/true\nStartLimitBurst=3\n"},
	{"fatal specifier", "[Service]\nType=oneshot\nExecStart=/bin/test %m = x\nEnvironment=A=1\nExecStart=/bin/true\n[Unit]\nDescription=d\n",
		"[Service]\nType=oneshot\nExecStart=/bin/test %m = x\nEnvironment=A=1\nExecStart=/bin/true\n\n[Unit]\nDescription=d\n"},
	{"fatal unknown specifier", "[Service]\nType=oneshot\nExecStart=/bin/echo %z\nEnvironment=A=1\nRemainAfterExit=yes\n",
		"[Service]\nType=oneshot\nExecStart=/bin/echo %z\nEnvironment=A=1\nRemainAfterExit=yes\n"},
	{"fatal exec prefix", "[Service]\nType=oneshot\nExecStart=/bin/true\nExecReload=@\nEnvironment=A=1\n",
		"[Service]\nExecStart=/bin/true\nType=oneshot\nExecReload=@\nEnvironment=A=1\n"},
	{"fatal user name", "[Service]\nUser=bad:name\nType=oneshot\nExecStart=/bin/true\n",
		"[Service]\nUser=bad:name\nExecStart=/bin/true\nType=oneshot\n"},
	{"fatal socket user", "[Socket]\nSocketUser=bad:name\nListenStream=/run/s\nAccept=no\n",
		"[Socket]\nSocketUser=bad:name\nAccept=no\nListenStream=/run/s\n"},
	{"fatal boolean", "[Service]\nType=oneshot\nDynamicUser=maybe\nExecStart=/bin/true\n",
		"[Service]\nType=oneshot\nDynamicUser=maybe\nExecStart=/bin/true\n"},
	{"fatal working directory", "[Service]\nType=oneshot\nWorkingDirectory=relative\nExecStart=/bin/true\n",
		"[Service]\nType=oneshot\nWorkingDirectory=relative\nExecStart=/bin/true\n"},
	{"fatal line before a later section", "[Service]\nExecStart=/bin/true\nUser=bad:name\n[Unit]\nDescription=d\n",
		"[Service]\nExecStart=/bin/true\nUser=bad:name\n\n[Unit]\nDescription=d\n"},
	{"valid fatal-capable lines sort", "[Service]\nUser=nobody\nWorkingDirectory=-~\nDynamicUser=no\nExecStart=-/bin/true\nGroup=nogroup\n",
		"[Service]\nDynamicUser=no\nExecStart=-/bin/true\nGroup=nogroup\nUser=nobody\nWorkingDirectory=-~\n"},
	{"unknown key is a barrier", "[Service]\nType=oneshot\nFutureKey=1\nExecStart=/bin/true\nEnvironment=A=1\n",
		"[Service]\nType=oneshot\nFutureKey=1\nEnvironment=A=1\nExecStart=/bin/true\n"},
	{"lifecycle", "[Service]\nExecStartPost=/bin/post\nExecStart=/bin/main\nExecStartPre=/bin/pre\nExecStopPost=/bin/stoppost\nExecStop=/bin/stop\n",
		"[Service]\nExecStartPre=/bin/pre\nExecStart=/bin/main\nExecStartPost=/bin/post\nExecStop=/bin/stop\nExecStopPost=/bin/stoppost\n"},
	{"socket lifecycle", "[Socket]\nExecStopPost=/bin/b\nExecStopPre=/bin/a\nExecStartPost=/bin/d\nExecStartPre=/bin/c\nListenStream=/run/s\n",
		"[Socket]\nExecStartPre=/bin/c\nExecStartPost=/bin/d\nExecStopPre=/bin/a\nExecStopPost=/bin/b\nListenStream=/run/s\n"},
}

// TestCanonicalInteractions checks the order of Canonical; some of the
// cases are units systemd refuses, which fmt refuses too, but whose order
// still decides what systemd loads before it stops.
func TestCanonicalInteractions(t *testing.T) {
	canonical := func(data []byte) ([]byte, error) {
		f, err := Parse(data)
		if err != nil {
			return nil, err
		}
		return f.Canonical(), nil
	}
	for _, tt := range interactionCases {
		t.Run(tt.Name, func(t *testing.T) {
			got, err := canonical([]byte(tt.In))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.Want, string(got)); diff != "" {
				t.Errorf("Canonical (-want +got):\n%s", diff)
			}
			again, err := canonical(got)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, got) {
				t.Errorf("not idempotent:\n%s\nthen\n%s", got, again)
			}
		})
	}
}

// TestInteractionClassesKnown keeps the class table in step with the
// generated vocabulary: a key systemd does not know, or a class that no
// longer has two keys, means the table describes another systemd.
func TestInteractionClassesKnown(t *testing.T) {
	members := map[string][]string{}
	for full, c := range classOf {
		sec, key, _ := strings.Cut(full, ".")
		if !KnownDirective(sec, key) {
			t.Errorf("class %s: %s is not a directive systemd knows", c, full)
		}
		members[c] = append(members[c], full)
	}
	for _, c := range interactionClasses {
		if len(members[c.name]) < 2 {
			t.Errorf("class %s has %d keys; a class of one key is the plain sort", c.name, len(members[c.name]))
		}
		if c.reason == "" {
			t.Errorf("class %s has no reason", c.name)
		}
	}
	for _, full := range knownDirectives {
		sec, key, _ := strings.Cut(full, ".")
		for _, p := range []string{"Condition", "Assert"} {
			if sec == SectionUnit && strings.HasPrefix(key, p) && classOf[full] != p {
				t.Errorf("%s is not in class %s", full, p)
			}
		}
	}
}

func TestFormatRefusesWhatSystemdRefuses(t *testing.T) {
	tests := []struct {
		in        string
		line, col int
		msg       string
	}{
		{"[Service]\nType=oneshot\nExecStart=@@/bin/echo x\n", 3, 12, `ExecStart=@@/bin/echo x: the prefix "@" is given twice`},
		{"[Socket]\nListenStream=/run/s\nExecStartPre=/bin/echo %z\n", 3, 24, "%z is not a specifier systemd knows"},
		{"[Service]\nExecStart=/bin/true\nExecReload=@/bin/kill\n", 3, 12, "argv[0]"},
	}
	for _, tt := range tests {
		_, err := Format([]byte(tt.in))
		pe, ok := err.(*ParseError)
		if !ok {
			t.Errorf("Format(%q) = %v, want a *ParseError", tt.in, err)
			continue
		}
		if pe.Line != tt.line || pe.Column != tt.col || !strings.Contains(pe.Msg, tt.msg) || !strings.Contains(pe.Msg, "systemd refuses to load the unit") {
			t.Errorf("Format(%q) = %d:%d %q, want %d:%d containing %q", tt.in, pe.Line, pe.Column, pe.Msg, tt.line, tt.col, tt.msg)
		}
	}
	// What systemd only ignores, because of "-", fmt keeps in its place.
	got, err := Format([]byte("[Service]\nType=oneshot\nExecStartPost=--/bin/true\nExecStart=/bin/true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "[Service]\nType=oneshot\nExecStartPost=--/bin/true\nExecStart=/bin/true\n"; string(got) != want {
		t.Errorf("Format = %q, want %q", got, want)
	}
}

// TestInteractionClassesMatchSystemd reads the directive table of the
// installed systemd (systemd --dump-configuration-items: every section's
// keys with the kind of value its parser takes) and checks the classes
// that systemd's own parser kinds define: every CONDITION key of [Unit] is
// in the Condition or Assert class, every SOCKET key of [Socket] in the
// Listen class, every TIMER key of [Timer] in the timer class, and every
// key of a class is one systemd reads in that section.
func TestInteractionClassesMatchSystemd(t *testing.T) {
	out, err := exec.Command("/usr/lib/systemd/systemd", "--dump-configuration-items").Output()
	if err != nil {
		hosttools.Unavailable(t, "systemd --dump-configuration-items: %v", err)
	}
	kinds := map[string]string{} // "Section.Key" -> kind
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
		case strings.Contains(line, "="):
			k, v, _ := strings.Cut(line, "=")
			kind, _, _ := strings.Cut(v, " ")
			kinds[section+"."+k] = kind
		}
	}
	if len(kinds) < 500 {
		t.Fatalf("read only %d directives from systemd", len(kinds))
	}
	want := map[string]map[string]string{
		SectionUnit:   {"CONDITION": ""}, // Condition or Assert, by prefix
		SectionSocket: {"SOCKET": "Listen"},
		SectionTimer:  {"TIMER": "OnActiveSec"},
	}
	for full, kind := range kinds {
		sec, key, _ := strings.Cut(full, ".")
		class, ok := want[sec][kind]
		if !ok {
			continue
		}
		if class == "" {
			class = "Condition"
			if strings.HasPrefix(key, "Assert") {
				class = "Assert"
			}
		}
		if got := classOf[full]; got != class {
			t.Errorf("%s (%s) is in class %q, want %q", full, kind, got, class)
		}
	}
	for full, class := range classOf {
		if _, ok := kinds[full]; !ok {
			t.Errorf("class %s: systemd does not read %s", class, full)
		}
	}
}
