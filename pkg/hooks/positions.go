package hooks

import (
	"iter"
	"strconv"
	"strings"
)

// positions maps document paths ("hooks[0].exec[2]") to where their value
// starts. The values of each hook are kept in a map of their own, under the
// rest of their path after "hooks[i]" ("" for the hook itself, ".exec[2]"):
// one map of every value of a spec of 10,000 hooks has 300,000 entries,
// and recording and looking them up, most of it cache misses in a table of
// tens of megabytes, was a quarter of a render's CPU. A hook's map is small
// and is used while that hook is decoded and rendered. Positions in the
// spec's own file, which are all of a parsed spec's, are kept as a line and
// a column (8 bytes rather than a Position's 32): the maps were 40% of a
// parsed spec's memory.
type positions struct {
	file  string              // the file of the positions in top and hooks
	top   map[string]place    // paths that are not under hooks[i]
	hooks []map[string]place  // hooks[i]: the paths under it
	other map[string]Position // positions in another file (see Spec.Locate)
}

// place is a Position in the spec's own file.
type place struct{ line, column int32 }

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

// sizeHook makes the map of hook i, for about n values.
func (p *positions) sizeHook(i, n int) {
	for len(p.hooks) <= i {
		p.hooks = append(p.hooks, nil)
	}
	if p.hooks[i] == nil {
		p.hooks[i] = make(map[string]place, n)
	}
}

func (p *positions) set(path string, pos Position) {
	if pos.File != p.file || int64(int32(pos.Line)) != int64(pos.Line) || int64(int32(pos.Column)) != int64(pos.Column) {
		if p.other == nil {
			p.other = map[string]Position{}
		}
		p.other[path] = pos
		return
	}
	if p.other != nil {
		delete(p.other, path)
	}
	pl := place{int32(pos.Line), int32(pos.Column)}
	// A hook's map is made when the hook is decoded (or located); an
	// index beyond them, which only Locate can give, goes to the top map.
	if i, rest, ok := hookPath(path); ok && i <= len(p.hooks) {
		p.sizeHook(i, 0)
		p.hooks[i][rest] = pl
		return
	}
	if p.top == nil {
		p.top = map[string]place{}
	}
	p.top[path] = pl
}

func (p *positions) get(path string) (Position, bool) {
	if pos, ok := p.other[path]; ok {
		return pos, true
	}
	if i, rest, ok := hookPath(path); ok && i < len(p.hooks) {
		if pl, ok := p.hooks[i][rest]; ok {
			return p.position(pl), true
		}
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

// all yields every recorded path with its position, for tests.
func (p *positions) all() iter.Seq2[string, Position] {
	return func(yield func(string, Position) bool) {
		for path, pos := range p.other {
			if !yield(path, pos) {
				return
			}
		}
		for path, pl := range p.top {
			if !yield(path, p.position(pl)) {
				return
			}
		}
		for i, m := range p.hooks {
			for rest, pl := range m {
				if !yield("hooks["+strconv.Itoa(i)+"]"+rest, p.position(pl)) {
					return
				}
			}
		}
	}
}
