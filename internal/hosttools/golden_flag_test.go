package hosttools

// go test ./... -update passes -update to every test binary; the flag is
// defined by internal/golden, so this package imports it to accept it.
import _ "github.com/hostprov/hostprov/internal/golden"
