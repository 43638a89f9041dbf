package aerostore

import as "github.com/aerospike/aerospike-client-go/v7"

// SetKeyHook makes s report every record key it builds to f (tests delete
// their records with it). Call it before s is used.
func SetKeyHook(s *Store, f func(*as.Key)) { s.onKey = f }
