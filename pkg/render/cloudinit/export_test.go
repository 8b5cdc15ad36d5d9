package cloudinit

// UnitDir gives the tests of package cloudinit_test the directory the
// output writes unit files and drop-ins under.
const UnitDir = unitDir
