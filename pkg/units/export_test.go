package units

// InteractionCases gives the rig test in package units_test the
// constructed units of order_test.go.
var InteractionCases = interactionCases

// CheckExecCases gives the rig test the values of execcheck_test.go.
var CheckExecCases = ExecCheckCases
