// Package spendtest holds what the tests of every spend.Store share: the
// conformance suite RunStoreSuite, run against each implementation
// (pebblestore, redisstore, aerostore), and StartRedis, which runs a real
// redis-server (/usr/bin/redis-server) on a free 127.0.0.1 port for a test.
// Only _test.go files import it.
package spendtest
