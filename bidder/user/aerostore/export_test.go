package aerostore

import as "github.com/aerospike/aerospike-client-go/v7"

// SetUserKeyHook makes s report every record key it builds to f. Call it
// before s is used.
func SetUserKeyHook(s *Store, f func(*as.Key)) { s.onKey = f }
