package aerostore_test

import (
	"testing"

	as "github.com/aerospike/aerospike-client-go/v7"

	"github.com/rtbd/rtbd/bidder/aerostore"
	"github.com/rtbd/rtbd/bidder/aerostore/aerotest"
	"github.com/rtbd/rtbd/bidder/internal/spendtest"
	"github.com/rtbd/rtbd/bidder/spend"
)

func TestLeaseSuite(t *testing.T) {
	clients := map[spend.LeaseStore]*as.Client{}
	opts := map[spend.LeaseStore]aerostore.Options{}
	spendtest.RunLeaseSuite(t, func(t *testing.T) spend.LeaseStore {
		srv, c := testServer(t)
		o := runOptions(aerotest.DefaultNamespace)
		s := spendStore(t, c, o, srv)
		clients[s], opts[s] = c, o
		return s
	}, func(t *testing.T, s spend.LeaseStore) spend.LeaseStore {
		return spendStore(t, clients[s], opts[s], nil)
	})
}
