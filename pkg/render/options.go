package render

// OptionError is an output option that cannot be met: an unknown version
// or variant, or a combination no tool can translate. It is a mistake in
// what was asked for, not in the spec or the units.
type OptionError struct {
	Option string // the option's name, as the command line spells it
	Msg    string
}

// Error is Msg, which says what was asked for and what can be.
func (e *OptionError) Error() string { return e.Msg }
