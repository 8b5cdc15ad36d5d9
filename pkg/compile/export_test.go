package compile

import (
	"github.com/hostprov/hostprov/pkg/hooks"
)

// BuildExamined is Build without the storage, and also returns how many
// refused paths the builder examined to tell which hooks the parser
// refused.
func BuildExamined(file string, data []byte) ([]Unit, hooks.Diagnostics, int) {
	spec, diags := hooks.Parse(file, data)
	if spec == nil {
		return nil, diags, 0
	}
	b := newBuilder(spec, diags)
	us := b.units()
	diags = append(diags, b.diags...)
	diags.Sort()
	return us, diags, b.examined
}
