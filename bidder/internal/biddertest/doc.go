// Package biddertest holds the fixtures the tests of bidder and of
// bidder/server share: the sample user and its profile, the catalog
// fixture built once per test binary, request-body edits, bounded waits
// and background load, and raw HTTP/1.1 connections that flood a server
// past its connection limit. Tests only: no product package imports it
// (layers_test.go checks it).
package biddertest
