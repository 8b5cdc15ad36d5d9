package units

// InteractionCases gives the rig test in package units_test the
// constructed units of order_test.go.
var InteractionCases = interactionCases

// CheckExecCases gives the rig test the values of execcheck_test.go.
var CheckExecCases = ExecCheckCases

// SplitExecCommands gives the rig test the reading of several commands
// that SplitExec is built on.
var SplitExecCommands = splitExecCommands

// UnitLoads gives the rig test the verdict of format.go on a CheckExec
// error.
var UnitLoads = unitLoads
