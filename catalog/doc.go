// Package catalog owns rtbd's product index: the on-disk layout (Pebble key
// and value encoding, index versions in a data directory), the local store
// that serves product masters from it with a bounded hot-product cache, and
// the gRPC server that catalog nodes (-mode=catalog) run.
//
// # Data directory
//
//	DIR/CURRENT              name of the live version ("v20261130T031500.123456789Z\n")
//	DIR/PREVIOUS             name of the version before it (rollback target)
//	DIR/LOCK                 held (flock) by a running ingest, and for a moment by a sweep
//	DIR/versions/NAME/       one Pebble DB per version, immutable once published
//	DIR/versions/NAME/READERS  flock held shared by every process serving NAME
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
package catalog
