package cloudinit

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// storageEntries returns the write_files entries and the runcmd commands
// that put st on the machine. Files go to write_files with their
// permissions and, when named, owner: owned by anyone but root they are
// written with defer: true, late in the boot (cloud-final), so that an
// owner created by the same boot exists by then. An owner given by id
// cannot be named to write_files (cloud-init looks owners up by name): the
// file is written as root and a chown in runcmd gives it to the id.
// A mode with set-user-ID or set-group-ID bits is set again by a chmod in
// runcmd, after write_files has given the file its owner, which clears
// them. Directories and links have no cloud-init module: runcmd makes them,
// before it starts any unit. write_files cannot verify a download, so a
// file from an https:// source is fetched by runcmd with cloud-init's own
// Python (downloadScript), checked against its hash and only then put in
// place; an s3:// source, which needs credentials cloud-init does not
// have, is refused at the file. A download for a hook in held (by its
// index) names that hook's mark, which the download leaves when it fails
// (see heldMarks).
func storageEntries(st compile.Storage, held map[hookKey]string) (files []*yaml.Node, cmds [][]string, err error) {
	var diags hooks.Diagnostics
	fetcher := false
	for _, d := range st.Directories {
		cmds = append(cmds, []string{"mkdir", "-p", d.Path}, []string{"chmod", fmt.Sprintf("%04o", d.Mode), d.Path})
		if c := chownCmd(d.User, d.Group, d.Path, false); c != nil {
			cmds = append(cmds, c)
		}
	}
	for _, f := range st.Files {
		if f.Source != "" && !strings.HasPrefix(f.Source, "https://") {
			diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: f.Pos,
				Message: "file " + f.Path + ": cloud-init cannot download from " + f.Source + ": only https:// sources",
				Hint:    "give an https:// URL (a presigned S3 URL works), the file's bytes with contents: or local:, or render for Ignition or Butane, which fetch s3:// themselves"})
			continue
		}
		if f.Source != "" {
			if !fetcher {
				fetcher = true
				perm := yamlnode.Str("0755")
				perm.Style = yaml.SingleQuotedStyle
				files = append(files, yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "path", yamlnode.Str(fetcherPath),
					"permissions", perm, "owner", yamlnode.Str("root:root"), "content", yamlnode.Text([]byte(downloadScript))))
			}
			c := []string{"python3", fetcherPath, f.Source, f.Hash, f.Path,
				fmt.Sprintf("%04o", f.Mode), f.User.String(), f.Group.String()}
			if mark, ok := held[hookKey{f.Pos.File, f.Hook}]; ok {
				c = append(c, mark)
			}
			cmds = append(cmds, c)
			continue
		}
		perm := yamlnode.Str(fmt.Sprintf("%04o", f.Mode))
		perm.Style = yaml.SingleQuotedStyle // a string: cloud-init refuses the integer 644
		n := yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "path", yamlnode.Str(f.Path), "permissions", perm)
		byID := f.User.ID != nil || f.Group.ID != nil
		if !byID {
			n = yamlnode.Pairs(n, "owner", yamlnode.Str(f.User.String()+":"+f.Group.String()))
		}
		switch enc, text := fileEncoding(f.Contents); enc {
		case "":
			yamlnode.Pairs(n, "content", yamlnode.Text(f.Contents))
		default:
			yamlnode.Pairs(n, "encoding", yamlnode.Str(enc), "content", yamlnode.Str(text))
		}
		if !byID && (f.User.Name != "" || f.Group.Name != "") {
			yamlnode.Pairs(n, "defer", yamlnode.Bool(true))
		}
		files = append(files, n)
		if byID {
			cmds = append(cmds, chownCmd(f.User, f.Group, f.Path, true))
		}
		if f.Mode&0o6000 != 0 {
			// write_files applies the mode and then the owner, and
			// chown clears the set-user-ID and set-group-ID bits (for
			// root too), so they are set again once the file has its
			// owner: runcmd comes after write_files, deferred or not.
			cmds = append(cmds, []string{"chmod", fmt.Sprintf("%04o", f.Mode), f.Path})
		}
	}
	for _, l := range st.Links {
		if dir := path.Dir(l.Path); dir != "/" {
			cmds = append(cmds, []string{"mkdir", "-p", dir})
		}
		if l.Overwrite {
			// What is there goes, a directory too, as Ignition's
			// overwrite removes it (ln -f replaces only a file).
			cmds = append(cmds, []string{"rm", "-rf", "--", l.Path})
		}
		if l.Hard {
			cmds = append(cmds, []string{"ln", "-f", l.Target, l.Path})
		} else {
			cmds = append(cmds, []string{"ln", "-sfn", l.Target, l.Path})
			if c := chownCmd(l.User, l.Group, l.Path, false); c != nil {
				// The link itself, not what it points to.
				cmds = append(cmds, append([]string{c[0], "-h"}, c[1:]...))
			}
		}
	}
	if len(diags) > 0 {
		return nil, nil, diags
	}
	return files, cmds, nil
}

// compressMin is the size from which a file's contents are
// written gzip-compressed (encoding: gz+b64) when that is shorter: the
// user data of a cloud is small (16 KiB on EC2), and the Ignition output
// compresses too. A smaller file stays text a person can read.
const compressMin = 4096

// fileEncoding is how write_files carries contents: "" for the text
// itself, "b64" for bytes that are not UTF-8 (YAML holds only Unicode
// text), or "gz+b64" for a file of compressMin bytes or more whose
// compressed base64 is shorter than the other; and the text to write.
// gzip writes no name and no time, so the same bytes give the same text.
func fileEncoding(contents []byte) (encoding, text string) {
	size := len(contents)
	if !utf8.Valid(contents) {
		encoding, text = "b64", base64.StdEncoding.EncodeToString(contents)
		size = len(text)
	}
	if len(contents) < compressMin {
		return encoding, text
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // a valid level: no error
	zw.Write(contents)                                       // a bytes.Buffer does not fail
	zw.Close()
	if gz := base64.StdEncoding.EncodeToString(buf.Bytes()); len(gz) < size {
		return "gz+b64", gz
	}
	return encoding, text
}

// fetcherPath is where the cloud-init output writes downloadScript,
// when a file has a source: in hostprov's state directory, not on PATH.
const fetcherPath = "/var/lib/hostprov/fetch.py"

// downloadScript fetches a file for cloud-init (python3 FETCHER URL HASH
// PATH MODE USER GROUP): Python is there wherever cloud-init is,
// which curl and sha256sum need not be. The bytes must have the hash
// ("sha256-HEX" or "sha512-HEX") before anything is written; they are
// written beside the path with their mode and owner, synced, and renamed
// over it, so that the path never holds a part or an unchecked file. A
// failure is printed (cloud-init-output.log and the journal have it) and
// exits non-zero; runcmd goes on with its next command, and cloud-init's
// status shows no error for it, as the VM test saw (runcmd's exit status
// is its last command's).
//
// runcmd runs after network-online.target, but on a real boot that only
// means an address: the server may not answer yet, a name may not resolve
// yet, a mirror may answer 503 for a moment. A failure that may pass (no
// connection, a timeout, a 5xx, 408 or 429 answer) is tried again with
// pauses of 1s, 2s, 4s, ... up to 30s, for at most 3 minutes (apply's
// --fetch-wait default); a final answer (404, 403, ...) or a wrong hash is
// not, so that a broken URL fails its file at once and the rest of runcmd
// goes on.
//
// A seventh argument, MARK, is a file the script makes when it fails,
// whatever the failure: the hook's units are then neither enabled nor
// started (heldMarks).
const downloadScript = `# Written by hostprov: downloads a file of a hook spec, checks its hash, and
# only then puts it in place (python3 fetch.py URL HASH PATH MODE USER GROUP [MARK]).
# When it fails it makes MARK, if given, so that the hook's units are not started.
import hashlib, os, shutil, sys, time, urllib.error, urllib.request
url, want, path, mode, user, group = sys.argv[1:7]
mark = sys.argv[7] if len(sys.argv) > 7 else None
algo, digest = want.split("-", 1)

def fetch():
    deadline, pause = time.monotonic() + 180, 1
    while True:
        try:
            with urllib.request.urlopen(url, timeout=300) as r:
                data = r.read()
            break
        except (urllib.error.URLError, OSError) as e:
            code = getattr(e, "code", None)
            if code is not None and not (code >= 500 or code in (408, 429)):
                raise
            if time.monotonic() + pause > deadline:
                raise
            print("hostprov: %s: %s; trying again in %ds" % (url, e, pause), file=sys.stderr)
            time.sleep(pause)
            pause = min(pause * 2, 30)
    got = hashlib.new(algo, data).hexdigest()
    if got != digest:
        sys.exit("hostprov: %s: %s has %s-%s, not the hash its verification gives; not written" % (path, url, algo, got))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = "%s.hostprov-%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        # The owner first: chown clears the set-user-ID and set-group-ID bits.
        shutil.chown(tmp, int(user) if user.isdigit() else user, int(group) if group.isdigit() else group)
        os.chmod(tmp, int(mode, 8))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise

try:
    fetch()
except BaseException:
    if mark:
        os.makedirs(os.path.dirname(mark), exist_ok=True)
        open(mark, "a").close()
    raise
`

// chownCmd gives path to user and group; nil when both are root and
// always is false.
func chownCmd(user, group compile.Owner, p string, always bool) []string {
	if user.IsZero() && group.IsZero() && !always {
		return nil
	}
	return []string{"chown", user.String() + ":" + group.String(), p}
}
