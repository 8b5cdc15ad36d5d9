package importer

// Leftovers gives the tests of package importer_test the prefix of a
// warning about a part of the input that goes to the leftovers.
const Leftovers = leftoversPrefix
