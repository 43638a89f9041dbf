// Package ingest turns product feeds into index versions (`rtbd ingest`)
// and writes synthetic feeds (`rtbd gen`). The feed format is package
// ingest/feed's; the index layout is package catalog's: ingest writes
// through catalog.Builder and never knows the bytes itself.
package ingest
