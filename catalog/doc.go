// Package catalog owns rtbd's product index: the on-disk layout (Pebble key
// and value encoding, index versions in a data directory), the local store
// that serves product masters from it with a bounded hot-product cache, and
// the gRPC server that catalog nodes (-mode=catalog) run.
//
// # Data directory
//
//	DIR/CURRENT              name of the live version and the directory's generation
//	                         ("v20261130T031500.123456789Z\ngeneration 7\n")
//	DIR/PREVIOUS             name of the version before it (rollback target)
//	DIR/LOCK                 held (flock) by a running ingest, and for a moment by a sweep
//	DIR/versions/NAME/       one Pebble DB per version, immutable once published
//	DIR/versions/NAME/READERS  flock held shared by every process serving NAME
//	DIR/versions/NAME/META     the version's content hash ("content_hash %016x\n")
//	DIR/versions/NAME/CHANGES  its chain of deltas (binary, checksummed; see indexversion.go)
//
// A version is built beside the live one and published by rewriting CURRENT
// atomically (write, fsync, rename, fsync dir). Serving processes poll
// CURRENT, open the new version, swap to it, and close the old one once no
// request holds it. A version directory is deleted only when it is neither
// CURRENT nor PREVIOUS and no process holds its READERS lock, and only by a
// holder of DIR/LOCK: the ingest at Publish (RemoveUnusedVersions), or a
// serving process after a switch and when a retired version's last request
// ends (a sweep, which skips its turn while an ingest runs).
//
// # Index versions
//
// A version's identity is (generation, content hash), IndexVersion. The
// content hash is the sum modulo 2^64 of xxhash64(key || value) over every
// record (HashRecord): it depends on the products alone, so nodes that
// ingested the same feed agree on it whatever the method or the duplicates
// in the feed. A full snapshot computes it with one scan before it is
// published; a delta from its base's hash and the keys it wrote (minus the
// base's records it replaced, plus its own), without a scan. Both write
// META into the version directory, fsynced, before publish. A version
// without META (built before versions carried one) is hashed once by each
// process that opens it, and logged; its directory is not written.
//
// The generation is the second line of CURRENT, so it changes atomically
// with the version it names: Publish and Rollback write the old CURRENT's
// generation plus one (a CURRENT of one line, written before generations
// existed, is generation 0). Version directories stay immutable: a rollback
// re-publishes an old version under a new generation.
//
// A delta's CHANGES lists the keys whose stored value differs from its
// base's (inserted, updated with other bytes, deleted; not an identical
// upsert nor the delete of an absent id), with the base's hash, after its
// base's own chain: at most 1,000,000 keys in all, the oldest steps dropped
// beyond. A full snapshot, and a delta writing more keys than that, start
// an empty chain. Local.Changes answers "what changed since version X":
// nothing when X's content hash is the current one; the union of the steps
// from the newest one starting at X's hash; else Full.
//
// # Keys and values
//
// Key: 'p' | product_group_id (8 bytes big-endian) | product_id (8 bytes
// big-endian), so a group's products are adjacent and sorted by id. Values use
// a compact hand-written encoding (see codec.go): a little smaller than the
// same product as protobuf (ids live in the key; 290 vs 307 bytes for the
// test fixture's full product), and it decodes with a single string
// allocation.
//
// # Semantics
//
// Every product store (Local here, the gRPC client in catalog/remote) answers
// GetProductMasters the same way: for each list, the products whose ids were
// asked for, in the order asked, skipping ids that do not exist, belong to
// another group, or are out of stock, each id at most once per list, stopping
// at *_quantity_at_most (0 or less: none). More than MaxIDs ids in all, or a
// product_group_id <= 0, is ErrInvalidArgument. An unknown group gives
// empty lists.
//
// GetProducts (Local.AppendProducts) returns records instead: one per id
// asked, group by group, in the order asked, with the value as stored
// (out-of-stock products included; empty when absent), for a client that
// keeps its own cache and applies the rules above itself.
package catalog
