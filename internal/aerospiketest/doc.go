// Package aerospiketest is an in-memory Aerospike wire-protocol TEST server. It
// exists so that rtbd's Aerospike stores (bidder/spend/aerostore, bidder/user/aerostore) can be tested over
// a real TCP connection by the real client, github.com/aerospike/aerospike-client-go/v7,
// on machines where no Aerospike server can be installed. It is never used in
// production and nothing outside _test.go files should import it.
//
// # What it implements
//
// One node on 127.0.0.1:<random port>, one namespace (Options.Namespace,
// default "test") owning all 4096 partitions, replication factor 1, AP mode.
//
//   - Info protocol (proto type 1): everything the v7 client's cluster tending
//     asks (build, node, features, partition-generation, cluster-name,
//     peers-generation, peers-clear-std/-alt and TLS variants with an empty peer
//     list, service-clear-std, services, replicas with a base64 bitmap of all
//     4096 partitions, rack-ids), plus replicas-all, replicas-master,
//     partitions, rebalance-generation, namespaces, namespace/<ns>, statistics,
//     and truncate / truncate-namespace (client.Truncate). Unknown names get an
//     empty value.
//   - AS_MSG (proto type 3) and compressed requests (proto type 4, sent when a
//     policy sets UseCompression): single-record Put/PutBins, Get (all bins or
//     named bins), GetHeader, Exists, Delete, Touch, and Operate with READ,
//     READ_HEADER, WRITE, ADD (integer and float), APPEND, PREPEND, TOUCH and
//     DELETE operations.
//   - Write policies: RecordExistsAction UPDATE, UPDATE_ONLY, REPLACE,
//     REPLACE_ONLY, CREATE_ONLY; GenerationPolicy EXPECT_GEN_EQUAL and
//     EXPECT_GEN_GT (checked only when the record exists, like the server);
//     generations start at 1 and wrap from 65535 to 1; RespondPerEachOp.
//   - Expiration: a write's TTL in seconds (0 = Options.DefaultTTL, -1 never,
//     -2 keep the current one; above 10 years is refused with 4 PARAMETER_ERROR) is judged by
//     Options.Now, so a fake clock expires records without sleeping.
//   - Batch: both v7 batch layouts, BATCH_INDEX_WITH_SET (BatchGet,
//     BatchGetOperate, BatchGetHeader, BatchExists, BatchGetComplex) and
//     BATCH_INDEX (BatchOperate with BatchRead/BatchWrite/BatchDelete,
//     BatchDelete), with a result per record (2 for a missing key). Note the v7
//     client sends a batch of ONE key as a single-record command instead.
//   - Particles: integer, float, string, blob, bool, and list/map stored as the
//     client's msgpack bytes and returned unchanged. A null value deletes a bin;
//     a record left without bins is deleted.
//   - Limits like a default server: bin names up to 15 bytes (21), set names
//     up to 63, records up to Options.MaxRecordSize (13, default 1 MiB), and
//     at most Options.MaxSets sets per namespace (default 4,095): a write
//     that would create a record in one more set gets 4 PARAMETER_ERROR; a
//     set counts once it has held a record, even emptied.
//   - Bad input: a frame with a wrong proto version/type or an oversized length
//     closes that connection; a well-framed but unparseable message gets
//     result code 4 (PARAMETER_ERROR) and the connection stays usable. Neither
//     stops the server.
//   - Test hooks: Records, Requests (counted by Kind*), Connections, Reset,
//     and SetFaultHook to answer with an error code, delay, drop the
//     connection, or execute the request and then drop the connection
//     unanswered (Fault.DropReply: an unknown outcome, as a lost reply of a
//     real server leaves the client).
//   - The real server's rules, each off by default: Options.NsupPeriodZero
//     (nsup-period 0, the server's default, refuses every write with a TTL
//     with 22 FAIL_FORBIDDEN), and SetRecordHook / FailRecords to fail
//     chosen records with a result code (14 KEY_BUSY on a hot key, 22 ...),
//     single-record commands or records inside a batch: as on a real server,
//     a batch is applied record by record, so the other records of that
//     batch are applied and each answers its own result code.
//
// # What it does NOT implement
//
// No clustering (one node, empty peer list, no migrations, no rack awareness
// beyond answering rack 0), no replication, no strong-consistency mode
// (SC read modes are accepted and ignored), no durability (memory only; Close
// loses everything), no secondary indexes, scans or queries, no UDFs (single,
// batch or background), no CDT list/map/bit/HLL operations, no filter or
// operation expressions, no GeoJSON or HLL particles (all answered with result
// code 16, UNSUPPORTED_FEATURE), no security, users or TLS (the admin protocol
// closes the connection), no XDR, no read-touch TTL percent (ignored), no
// server-side timeouts (the request's timeout field is ignored), and responses
// are never compressed even when the client asks for it. Data lives in one
// map behind one mutex: it says nothing about server performance.
//
// # What passing tests against it proves
//
// That the adapter drives the real v7 client correctly: keys, sets and bin
// names it builds, the policies it sets (TTL, exists action, generation), how
// it reads results and maps result codes (not found, generation conflict,
// record too big, timeouts and dropped connections via SetFaultHook), that it
// is safe under concurrency with a real connection pool, and that batches
// return per-key results. It does not prove behaviour that depends on a real
// cluster: partition migrations, node failover, replica reads, hot-key
// contention (14 KEY_BUSY happens only when SetRecordHook injects it), eviction, storage limits other than
// record size, server-side expiration timing (records here expire exactly at
// their TTL by Options.Now, a real server's nsup removes them later), or
// latency. Record.Expiration as seen by the client is computed by the client
// against its real clock, so with a fake clock far from real time it is
// meaningless; compare it only when the fake clock starts near time.Now().
package aerospiketest
