package aerostore_test

import (
	"testing"

	as "github.com/aerospike/aerospike-client-go/v7"

	"github.com/rtbd/rtbd/bidder/internal/aero"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/internal/aerospiketest"
)

func TestLeaseSuite(t *testing.T) {
	clients := map[spend.LeaseStore]*as.Client{}
	opts := map[spend.LeaseStore]aero.Options{}
	spendtest.RunLeaseSuite(t, func(t *testing.T) spend.LeaseStore {
		srv, c := testServer(t)
		o := runOptions(aerospiketest.DefaultNamespace)
		s := spendStore(t, c, o, srv)
		clients[s], opts[s] = c, o
		return s
	}, func(t *testing.T, s spend.LeaseStore) spend.LeaseStore {
		return spendStore(t, clients[s], opts[s], nil)
	})
}
