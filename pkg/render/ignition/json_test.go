package ignition

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendJSONString holds appendJSONString to encoding/json's encoder
// with SetEscapeHTML(false), which wrote the Ignition config's strings
// before.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a", "[Unit]\nDescription=x\n", "\"q\" \\ </script> &amp;", "\x00\x01\x08\x0c\x1f\x7f",
		"\t\r\n", "é 日本 \U0001F600", "\u2028\u2029", "\xff\xfe", "a\xc3", "\xed\xa0\x80", "\ufffd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := appendJSONString([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got[1:], want)
		}
	})
}
