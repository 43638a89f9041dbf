//go:build !linux || race

package arrival

import "net"

// Supported reports whether this build stamps connections.
const Supported = false

func listen(ln net.Listener) net.Listener { return ln }
