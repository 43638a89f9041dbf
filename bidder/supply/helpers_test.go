package supply

import "github.com/prebid/openrtb/v20/openrtb2"

// chainOf returns a complete chain of the nodes given as asi, sid pairs.
func chainOf(asiSID ...string) *openrtb2.SupplyChain {
	c := &openrtb2.SupplyChain{Complete: 1, Ver: "1.0"}
	for i := 0; i+1 < len(asiSID); i += 2 {
		c.Nodes = append(c.Nodes, openrtb2.SupplyChainNode{ASI: asiSID[i], SID: asiSID[i+1]})
	}
	return c
}
