// Package catalogpb holds the Catalog gRPC contract (catalog.proto) and the
// code protoc generates from it. Regenerate with `make proto`.
package catalogpb

//go:generate protoc -I . --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative catalog.proto
