package hooks

import (
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
)

// The schema of a hook spec is one table per kind of entry: a hook, a step,
// a drop-in, an entry of files (with its verification), directories,
// links, users and groups. A table names each field of the entry in the
// order the spec reference documents it, with its YAML key, its type as
// the reference writes it, what the checks across fields know of it, how
// its value is decoded and checked, and how it is encoded. The decoder,
// the encoder, the checks across fields and the tests that hold the spec
// reference and the HostHooks API to the spec all read these tables: a
// field is added in one place.

// field is one field of an entry of type T.
type field[T any] struct {
	key string
	// typ is the field's type as the fields table of the spec reference
	// writes it ("string", "list of unit names"); "" for an entry whose
	// fields the reference lists without types.
	typ   string
	roles role
	// decode decodes the field's value into t, reporting its problems.
	// What the entry's own checks need to know of how the field was
	// written beyond its value, it records in d.entry().
	decode func(d *decoder, v value, t *T)
	// encode is the field's value in an encoded spec, or nil when the
	// value is the default, which an encoded spec leaves out.
	encode func(t *T) *yaml.Node
	// set says, without building the encoded value, whether encode would
	// give one: Hook.Generated asks it of every hook a spec has. nil
	// means ask encode.
	set func(t *T) bool
}

// isSet says whether the field of t has a value other than its default.
func (f *field[T]) isSet(t *T) bool {
	if f.set != nil {
		return f.set(t)
	}
	return f.encode(t) != nil
}

// role is what the checks across a hook's fields know of a field.
type role uint8

const (
	// generated: the field makes up a generated unit, so a raw manifest,
	// which is the unit as written, would ignore it.
	generated role = 1 << iota
	// service: the field only means something in a [Service] section.
	service
	// body: the field is what a unit runs or is made of; a masked unit
	// has no use for it.
	body
	// replacedBySteps: a command hook's steps replace the field: steps
	// are the commands, always of a oneshot that remains active.
	replacedBySteps
	// content: the field, when it is set, makes unit content, so that
	// the hook renders to a unit file of its own (see Hook.Generated).
	// expandEnv and specifiers only change how other fields are written,
	// and when is only used with steps.
	content
)

// kind is the table of one kind of entry, with what decoding needs.
type kind[T any] struct {
	// name is the entry in messages: "hook", "drop-in", "file".
	name   string
	fields []field[T]
	// keys are the fields' keys, in order; place is each key's place
	// in fields, which is its bit in a fieldSet.
	keys  []string
	place map[string]int
	// unknown reports a key that is not a field of the entry.
	unknown func(d *decoder, e entry)
	// check makes the checks across the entry's fields, once all are
	// decoded; nil when there are none.
	check func(d *decoder, v value, t *T, s *entryState)
}

// newKind makes the kind named name of fields; its unknown is to be set.
func newKind[T any](name string, fields []field[T]) *kind[T] {
	if len(fields) > 64 {
		panic("a fieldSet holds 64 fields")
	}
	k := &kind[T]{name: name, fields: fields, place: make(map[string]int, len(fields))}
	for i, f := range fields {
		k.keys = append(k.keys, f.key)
		k.place[f.key] = i
	}
	return k
}

// fieldSet is a set of the fields of an entry, by their place in its
// kind's fields: two maps per hook, for which fields were written and
// which had problems, were a tenth of the allocations of reading a spec.
type fieldSet uint64

// has reports whether the set holds the field key of k.
func (k *kind[T]) has(s fieldSet, key string) bool {
	i, ok := k.place[key]
	return ok && s&(1<<i) != 0
}

// with returns the set of k's fields that have any of roles.
func (k *kind[T]) with(roles role) fieldSet {
	var s fieldSet
	for i, f := range k.fields {
		if f.roles&roles != 0 {
			s |= 1 << i
		}
	}
	return s
}

// entryState is what the checks of an entry need to know of how it was
// written, beyond its decoded value.
type entryState struct {
	present fieldSet // fields that were written
	bad     fieldSet // fields that had a problem of their own
	unknown bool     // a key was not a field
	nameOK  bool     // the name decoded as a string (hooks, steps, drop-ins)
	// sources are the first two of a file's contents, local and source,
	// in the order written, and nsources how many it has.
	sources  [2]string
	nsources int
	// target is a link's target, owner the last of its user and group.
	target, owner value
}

// maxDepth is how deep entries nest: a file's verification is in a file,
// which is in a hook.
const maxDepth = 3

// entry returns the state of the entry being decoded. The states are the
// decoder's, one per level of nesting, rather than each entry's own: the
// fields' decode functions are called through the tables, and what is
// passed to a function that the compiler cannot see is allocated on the
// heap.
func (d *decoder) entry() *entryState { return &d.states[d.depth-1] }

// decodeEntry decodes the mapping at v, an entry of kind k, into t: each
// key by its field, in document order; then the entry's checks. It
// returns what the entry's state was at the end.
func decodeEntry[T any](d *decoder, k *kind[T], v value, t *T) entryState {
	if d.depth == maxDepth {
		panic("hooks: entries nest deeper than maxDepth")
	}
	d.depth++
	s := d.entry()
	*s = entryState{}
	d.mapping(v.node, v.path, func(e entry) {
		i, known := k.place[e.name]
		if !known {
			s.unknown = true
			k.unknown(d, e)
			return
		}
		s.present |= 1 << i
		before := len(d.diags)
		k.fields[i].decode(d, e.value, t)
		if len(d.diags) > before {
			s.bad |= 1 << i
		} else {
			s.bad &^= 1 << i
		}
	})
	if k.check != nil {
		k.check(d, v, t, s)
	}
	d.depth--
	return *s
}

// decodeEntries decodes a list of entries of kind k at v. example shows
// one entry in hints.
func decodeEntries[T any](d *decoder, k *kind[T], v value, example string) []T {
	var out []T
	d.entries(v, k.name, example, func(i int, item value) {
		out = append(out, *new(T))
		decodeEntry(d, k, item, &out[len(out)-1])
	})
	return out
}

// storageList decodes a list of entries of the kind *k, which put things
// on the machine; example shows one entry in hints.
func storageList[E any](k **kind[E], example string) func(*decoder, value) []E {
	return func(d *decoder, v value) []E { return decodeEntries(d, *k, v, example) }
}

// encodeEntry encodes t, an entry of kind k, as a mapping of its fields
// in the order of the table, leaving out those at their default.
func encodeEntry[T any](k *kind[T], t *T) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, f := range k.fields {
		if v := f.encode(t); v != nil {
			yamlnode.Pairs(n, f.key, v)
		}
	}
	return n
}

// encodeEntries encodes a list of entries, nil when it is empty.
func encodeEntries[T any](k *kind[T], ts []T) *yaml.Node {
	if len(ts) == 0 {
		return nil
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for i := range ts {
		seq.Content = append(seq.Content, encodeEntry(k, &ts[i]))
	}
	return seq
}

// Fields are the fields of each kind of entry of a hook spec, by the
// entry's name ("hook", "step", "drop-in", "file", "verification",
// "directory", "link", "user", "group"), each in the order the spec
// reference documents them: for a schema of the hook spec elsewhere (the
// HostHooks API and its CRD) to be checked against.
func Fields() map[string][]string {
	m := map[string][]string{}
	add := func(name string, keys []string) { m[name] = append([]string(nil), keys...) }
	add(hookKind.name, hookKind.keys)
	add(stepKind.name, stepKind.keys)
	add(dropinKind.name, dropinKind.keys)
	add(fileKind.name, fileKind.keys)
	add(verificationKind.name, verificationKind.keys)
	add(directoryKind.name, directoryKind.keys)
	add(linkKind.name, linkKind.keys)
	add(userKind.name, userKind.keys)
	add(groupKind.name, groupKind.keys)
	return m
}

// The builders of the usual fields. at returns where the field's value is
// in an entry.

// stringField is a string that dec decodes and enc encodes when it is not
// empty.
func stringField[T any](key, typ string, roles role, at func(*T) *string, dec func(*decoder, value) string,
	enc func(string) *yaml.Node) field[T] {
	return field[T]{key: key, typ: typ, roles: roles,
		decode: func(d *decoder, v value, t *T) { *at(t) = dec(d, v) },
		encode: func(t *T) *yaml.Node {
			if s := *at(t); s != "" {
				return enc(s)
			}
			return nil
		},
		set: func(t *T) bool { return *at(t) != "" }}
}

// plain is a string field that is written on one line.
func plain[T any](key, typ string, roles role, at func(*T) *string, dec func(*decoder, value) string) field[T] {
	return stringField(key, typ, roles, at, dec, yamlnode.Str)
}

// flag is a boolean whose default is false.
func flag[T any](key string, roles role, at func(*T) *bool) field[T] {
	return field[T]{key: key, typ: "bool", roles: roles,
		decode: func(d *decoder, v value, t *T) { *at(t), _ = d.boolean(v) },
		encode: func(t *T) *yaml.Node {
			if *at(t) {
				return yamlnode.Bool(true)
			}
			return nil
		},
		set: func(t *T) bool { return *at(t) }}
}

// optionalBool is a boolean that may be left out: nil.
func optionalBool[T any](key string, roles role, at func(*T) **bool) field[T] {
	return field[T]{key: key, typ: "bool", roles: roles,
		decode: func(d *decoder, v value, t *T) {
			if b, ok := d.boolean(v); ok {
				*at(t) = &b
			}
		},
		encode: func(t *T) *yaml.Node {
			if b := *at(t); b != nil {
				return yamlnode.Bool(*b)
			}
			return nil
		},
		set: func(t *T) bool { return *at(t) != nil }}
}

// words is a list of strings that dec decodes, written on one line when
// it is not empty.
func words[T any](key, typ string, roles role, at func(*T) *[]string, dec func(*decoder, value) []string) field[T] {
	return field[T]{key: key, typ: typ, roles: roles,
		decode: func(d *decoder, v value, t *T) { *at(t) = dec(d, v) },
		encode: func(t *T) *yaml.Node {
			if l := *at(t); len(l) > 0 {
				return yamlnode.Words(l)
			}
			return nil
		},
		set: func(t *T) bool { return len(*at(t)) > 0 }}
}

// entryList is a list of entries of the kind *k (a variable, which is set
// when the package is initialised), which dec decodes, left out when it
// is empty.
func entryList[E any](key, typ string, roles role, k **kind[E], at func(*Hook) *[]E, dec func(*decoder, value) []E) field[Hook] {
	return field[Hook]{key: key, typ: typ, roles: roles,
		decode: func(d *decoder, v value, h *Hook) { *at(h) = dec(d, v) },
		encode: func(h *Hook) *yaml.Node { return encodeEntries(*k, *at(h)) },
		set:    func(h *Hook) bool { return len(*at(h)) > 0 }}
}

// The decoders of the usual values, for the builders.

// str decodes a string on one line.
func str(d *decoder, v value) string {
	s, _ := d.str(v, false)
	return s
}

// multiline decodes a text that may span lines.
func multiline(d *decoder, v value) string {
	s, _ := d.str(v, true)
	return s
}

// oneOf decodes a string that is one of allowed, a what ("service type").
func oneOf(allowed []string, what string) func(*decoder, value) string {
	return func(d *decoder, v value) string {
		s, _ := d.str(v, false)
		d.oneOf(v, s, allowed, what)
		return s
	}
}

// strList decodes a list of strings; example shows one in hints.
func strList(example string) func(*decoder, value) []string {
	return func(d *decoder, v value) []string {
		l, _ := d.strList(v, example)
		return l
	}
}
