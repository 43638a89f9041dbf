package rtb_test

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/rtbd/rtbd/rtb"
)

func ExampleDecodeRequest() {
	var req openrtb2.BidRequest // reuse it for the next request
	err := rtb.DecodeRequest([]byte(`{"id":"a1","imp":[{"id":"1","banner":{"w":300,"h":250}}],"tmax":120}`), &req)
	fmt.Println(err, req.ID, len(req.Imp), req.TMax)

	err = rtb.DecodeRequest([]byte(`{"id":"a2","imp":[]}`), &req)
	var re *rtb.RequestError
	if errors.As(err, &re) {
		fmt.Println(int(re.NBR), re.NBR.String(), re.Field)
		fmt.Printf("%s\n", rtb.AppendNoBid(nil, "a2", re.NBR))
	}
	// Output:
	// <nil> a1 1 120
	// 2 invalid_request imp
	// {"id":"a2","nbr":2}
}

func ExampleAppendResponse() {
	resp := openrtb2.BidResponse{ID: "a1", Cur: "USD", SeatBid: []openrtb2.SeatBid{{Bid: []openrtb2.Bid{{
		ID: "b1", ImpID: "1", Price: 1.25, AdM: `<a href="https://x/">ad</a>`, W: 300, H: 250,
	}}}}}
	buf := make([]byte, 0, 4096) // from a pool in the bidder
	buf, err := rtb.AppendResponse(buf[:0], &resp)
	fmt.Println(string(buf), err)
	// Output:
	// {"id":"a1","seatbid":[{"bid":[{"id":"b1","impid":"1","price":1.25,"adm":"<a href=\"https://x/\">ad</a>","w":300,"h":250}]}],"cur":"USD"} <nil>
}

func ExampleDecryptPrice() {
	// Google's published example keys (web-safe base64) and price token.
	encKey, _ := base64.URLEncoding.DecodeString("skU7Ax_NL5pPAFyKdkfZjZz2-VhIN8bjj1rVFOaJ_5o=")
	intKey, _ := base64.URLEncoding.DecodeString("arO23ykdNqUQ5LEoQ0FVmPkBd7xB5CO89PDZlSjpFxo=")
	micros, err := rtb.DecryptPrice(encKey, intKey, "YWJjMTIzZGVmNDU2Z2hpN7fhCuPemCAWJRxOgA")
	fmt.Println(micros, err)
	// Output:
	// 1900 <nil>
}
