package hooks

import (
	"iter"
	"slices"
	"strconv"
	"strings"
)

// positions maps document paths ("hooks[0].exec[2]") to where their value
// starts, and the paths of quoted and block scalars to where their lines
// start (see scalarLines).
//
// Nearly all of a spec's values are in its hooks, and the hooks of a spec
// are written alike: the rest of a value's path after "hooks[i]" (""
// for the hook itself, ".exec[2]") is one of a few dozen. Each such rest
// is given a number once, and a hook's values are kept as (number,
// position) pairs in one array of all the hooks, hook after hook, in the
// order the decoder records them: no map and no path string per value.
// Maps of every value, keyed by their paths, were half of a parsed spec's
// memory and a tenth of a render's CPU. The few paths outside the hooks
// are in top and texts; positions in another file (see Spec.Locate), and
// paths under a hook recorded after it was decoded, are in other and
// texts.
type positions struct {
	file  string              // the file of the positions in top, values and lines
	top   map[string]place    // paths that are not under hooks[i]
	other map[string]Position // positions in another file, and located ones (see set)
	// texts holds the lines of the scalars that are not in lines:
	// outside the hooks, folded ones, and located ones.
	texts map[string]blockScalar

	// rests numbers the rests of paths under hooks[i]; rest[n] is the
	// one numbered n.
	rests map[string]uint32
	rest  []string
	// Hooks are written alike, so the rest recorded after rest n is
	// most often the one recorded after it the time before: next[n] is
	// 1 + that one, and first 1 + the first rest of the hook before.
	// last is 1 + the rest recorded last in the open hook, 0 before its
	// first. A guess that is right (most are) saves looking the rest up.
	next        []uint32
	first, last uint32
	// values and lines hold the positions of the values under each hook,
	// and of the lines of its quoted and literal scalars.
	values hookTable[near]
	lines  hookTable[nearLines]
	// base[i] is the line of hook i, which the lines of its values are
	// counted from.
	base []int32
	// open is 1 + the hook whose values are being recorded, 0 when none
	// is: once a hook is decoded, what is recorded under it goes to other
	// or texts.
	open int
}

// place is a Position in the spec's own file.
type place struct{ line, column int32 }

// near is the place of a value of a hook: its line counted from the
// hook's, and its column. Positions that do not fit, such as those of an
// alias's target far from the hook, are kept in other.
type near struct {
	dline  int16
	column uint16
}

// nearLines says where the lines of a quoted or literal scalar of a hook
// start: count consecutive source lines from dline after the hook's, all
// at column.
type nearLines struct {
	dline  int16
	column uint16
	count  uint32
}

// nearHook returns line and column as a near of hook i, if they fit.
func (p *positions) nearHook(i, line, column int) (near, bool) {
	dl := line - int(p.base[i])
	if int(int16(dl)) != dl || int(uint16(column)) != column {
		return near{}, false
	}
	return near{int16(dl), uint16(column)}, true
}

// blockScalar maps the lines of a decoded string value to the source.
type blockScalar struct {
	// Line n of the value starts on source line first+n-1, for n up to
	// count; or, when lines is not nil, on lines[n-1]: folded (">")
	// scalars join source lines, so theirs are not always a run of
	// consecutive numbers.
	first, count int
	lines        []int
	// column is where every line of the value starts: the content
	// indentation of a block scalar plus one, or the column after the
	// opening quote.
	column int
}

// line returns the source line on which line n of the value starts.
func (b blockScalar) line(n int) (int, bool) {
	switch {
	case b.lines != nil:
		if n >= 1 && n <= len(b.lines) {
			return b.lines[n-1], true
		}
	case n >= 1 && n <= b.count:
		return b.first + n - 1, true
	}
	return 0, false
}

// hookTable holds values recorded under the hooks, hook after hook,
// each under the number of the rest of its path.
type hookTable[V any] struct {
	ents []hookEntry[V]
	// start[i] is where the entries of hook i begin; they end where
	// those of hook i+1 begin, or with ents.
	start []uint32
	// big indexes the entries of each hook that has more than
	// smallHook, so that asking for every value of a hook of many
	// values is not quadratic.
	big map[int]map[uint32]int32
	// hooks is how many hooks there are, when known: the entries are
	// then grown to what the hooks so far promise for all of them,
	// rather than doubled, which allocated twice what they hold.
	hooks int
}

type hookEntry[V any] struct {
	id uint32
	v  V
}

// smallHook is the most entries of a hook that are looked through in
// order rather than indexed.
const smallHook = 48

// begin starts the entries of hook i, which is after every hook begun.
func (t *hookTable[V]) begin(i int) {
	for len(t.start) <= i {
		t.start = append(t.start, uint32(len(t.ents)))
	}
}

// add records v under id for hook i, the last begun.
func (t *hookTable[V]) add(i int, id uint32, v V) {
	if n := len(t.ents); n == cap(t.ents) && t.hooks > len(t.start) {
		// The entries per hook so far, for the hooks to come, and a
		// little more.
		want := n + n*(t.hooks-len(t.start)+1)/len(t.start)
		want += want / 32
		t.ents = slices.Grow(t.ents, max(want-n, n/8, 16))
	}
	t.ents = append(t.ents, hookEntry[V]{id, v})
	lo, hi := int(t.start[i]), len(t.ents)
	if hi-lo <= smallHook {
		return
	}
	m := t.big[i]
	if m == nil {
		if t.big == nil {
			t.big = map[int]map[uint32]int32{}
		}
		m = make(map[uint32]int32, 2*(hi-lo))
		for j := lo; j < hi; j++ {
			m[t.ents[j].id] = int32(j)
		}
		t.big[i] = m
	}
	m[id] = int32(hi - 1)
}

// get returns what is recorded last under id for hook i.
func (t *hookTable[V]) get(i int, id uint32) (V, bool) {
	var zero V
	if i >= len(t.start) {
		return zero, false
	}
	if m, ok := t.big[i]; ok {
		j, ok := m[id]
		if !ok {
			return zero, false
		}
		return t.ents[j].v, true
	}
	lo, hi := int(t.start[i]), len(t.ents)
	if i+1 < len(t.start) {
		hi = int(t.start[i+1])
	}
	for j := hi - 1; j >= lo; j-- {
		if t.ents[j].id == id {
			return t.ents[j].v, true
		}
	}
	return zero, false
}

// all yields the hook and the entry of every entry but those that a
// later one of its hook with the same id replaces.
func (t *hookTable[V]) all() iter.Seq2[int, hookEntry[V]] {
	return func(yield func(int, hookEntry[V]) bool) {
		for i := range t.start {
			lo, hi := int(t.start[i]), len(t.ents)
			if i+1 < len(t.start) {
				hi = int(t.start[i+1])
			}
			seen := map[uint32]bool{}
			for j := hi - 1; j >= lo; j-- {
				if e := t.ents[j]; !seen[e.id] {
					seen[e.id] = true
					if !yield(i, e) {
						return
					}
				}
			}
		}
	}
}

// hookPath splits "hooks[12].exec" into 12 and ".exec"; ok is false for a
// path that is not under an entry of hooks (or writes its index other than
// as Parse does, such as "hooks[012]").
func hookPath(path string) (i int, rest string, ok bool) {
	const prefix = "hooks["
	if !strings.HasPrefix(path, prefix) {
		return 0, "", false
	}
	j := len(prefix)
	for ; j < len(path) && path[j] >= '0' && path[j] <= '9'; j++ {
		if i = i*10 + int(path[j]-'0'); i > 1<<30 {
			return 0, "", false
		}
	}
	if j == len(prefix) || j == len(path) || path[j] != ']' || path[len(prefix)] == '0' && j > len(prefix)+1 {
		return 0, "", false
	}
	return i, path[j+1:], true
}

// beginHook starts recording the values of hook i, which comes after
// every hook recorded so far.
func (p *positions) beginHook(i, line int) {
	p.values.begin(i)
	p.lines.begin(i)
	for len(p.base) <= i {
		p.base = append(p.base, 0)
	}
	if int(int32(line)) == line {
		p.base[i] = int32(line)
	}
	p.open = i + 1
	p.last = 0
}

// endHook ends the recording of the hook that beginHook started.
func (p *positions) endHook() { p.open = 0 }

// inOpenHook returns the hook of path and the number of the rest of its
// path when path is under the hook being recorded; ok is false if not.
func (p *positions) inOpenHook(path string) (i int, id uint32, ok bool) {
	i, rest, ok := hookPath(path)
	if !ok || i != p.open-1 {
		return 0, 0, false
	}
	guess := p.first
	if p.last > 0 {
		guess = p.next[p.last-1]
	}
	if guess > 0 && p.rest[guess-1] == rest {
		id, ok = guess-1, true
	} else {
		id, ok = p.rests[rest]
	}
	if !ok {
		if p.rests == nil {
			p.rests = map[string]uint32{}
		}
		// The path is cut from a larger buffer (see decoder.paths),
		// which the key would otherwise keep alive.
		rest = strings.Clone(rest)
		id = uint32(len(p.rest))
		p.rests[rest] = id
		p.rest = append(p.rest, rest)
		p.next = append(p.next, 0)
	}
	if p.last > 0 {
		p.next[p.last-1] = id + 1
	} else {
		p.first = id + 1
	}
	p.last = id + 1
	return i, id, true
}

// hookID is inOpenHook for any hook's path, for looking up: ok is false
// when path is not under a hook or its rest was never recorded.
func (p *positions) hookID(path string) (i int, id uint32, ok bool) {
	i, rest, ok := hookPath(path)
	if !ok {
		return 0, 0, false
	}
	id, ok = p.rests[rest]
	return i, id, ok
}

// traceSet and traceLines, when not nil, are told of every position
// recorded, for the test that holds the compact store to a map of them.
var (
	traceSet   func(path string, pos Position)
	traceLines func(path string, b blockScalar)
)

func (p *positions) set(path string, pos Position) {
	if traceSet != nil {
		traceSet(path, pos)
	}
	if pos.File != p.file || int64(int32(pos.Line)) != int64(pos.Line) || int64(int32(pos.Column)) != int64(pos.Column) {
		put(&p.other, path, pos)
		return
	}
	pl := place{int32(pos.Line), int32(pos.Column)}
	if i, id, ok := p.inOpenHook(path); ok {
		if n, ok := p.nearHook(i, pos.Line, pos.Column); ok {
			delete(p.other, path)
			p.values.add(i, id, n)
			return
		}
		// The path is cut from a larger buffer (see decoder.paths).
		put(&p.other, strings.Clone(path), pos)
		return
	}
	if _, _, ok := hookPath(path); ok {
		// Under a hook that is not being decoded: only Locate records
		// such a path. other is looked at first.
		put(&p.other, path, pos)
		return
	}
	delete(p.other, path)
	// A top-level key's path is a string of the source (see
	// decoder.keep).
	put(&p.top, strings.Clone(path), pl)
}

// put sets (*m)[k], making the map on first use: the zero positions
// has none, and a spec may never need some of them.
func put[V any](m *map[string]V, k string, v V) {
	if *m == nil {
		*m = map[string]V{}
	}
	(*m)[k] = v
}

func (p *positions) get(path string) (Position, bool) {
	if pos, ok := p.other[path]; ok {
		return pos, true
	}
	if i, id, ok := p.hookID(path); ok {
		if n, ok := p.values.get(i, id); ok {
			return p.nearPosition(i, n), true
		}
		return Position{}, false
	}
	pl, ok := p.top[path]
	if !ok {
		return Position{}, false
	}
	return p.position(pl), true
}

func (p *positions) position(pl place) Position {
	return Position{File: p.file, Line: int(pl.line), Column: int(pl.column)}
}

func (p *positions) nearPosition(i int, n near) Position {
	return Position{File: p.file, Line: int(p.base[i]) + int(n.dline), Column: int(n.column)}
}

func (p *positions) nearScalar(i int, l nearLines) blockScalar {
	return blockScalar{first: int(p.base[i]) + int(l.dline), count: int(l.count), column: int(l.column)}
}

// setLines records where the lines of the scalar at path start.
func (p *positions) setLines(path string, b blockScalar) {
	if traceLines != nil {
		traceLines(path, b)
	}
	if b.lines == nil && int64(int32(b.first)) == int64(b.first) && int64(int32(b.count)) == int64(b.count) &&
		int64(int32(b.column)) == int64(b.column) {
		if i, id, ok := p.inOpenHook(path); ok {
			if n, ok := p.nearHook(i, b.first, b.column); ok && int(uint32(b.count)) == b.count {
				delete(p.texts, path)
				p.lines.add(i, id, nearLines{n.dline, n.column, uint32(b.count)})
				return
			}
		}
	}
	put(&p.texts, strings.Clone(path), b)
}

// scalar returns where the lines of the scalar at path start.
func (p *positions) scalar(path string) (blockScalar, bool) {
	if b, ok := p.texts[path]; ok {
		return b, true
	}
	if i, id, ok := p.hookID(path); ok {
		if l, ok := p.lines.get(i, id); ok {
			return p.nearScalar(i, l), true
		}
	}
	return blockScalar{}, false
}

// hookFullPath is the path of the entry id of hook i.
func (p *positions) hookFullPath(i int, id uint32) string {
	return "hooks[" + strconv.Itoa(i) + "]" + p.rest[id]
}

// all yields every recorded path with its position, for tests.
func (p *positions) all() iter.Seq2[string, Position] {
	return func(yield func(string, Position) bool) {
		for path, pos := range p.other {
			if !yield(path, pos) {
				return
			}
		}
		for path, pl := range p.top {
			if _, ok := p.other[path]; ok {
				continue
			}
			if !yield(path, p.position(pl)) {
				return
			}
		}
		for i, e := range p.values.all() {
			path := p.hookFullPath(i, e.id)
			if _, ok := p.other[path]; ok {
				continue
			}
			if !yield(path, p.nearPosition(i, e.v)) {
				return
			}
		}
	}
}
