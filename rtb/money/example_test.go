package money_test

import (
	"fmt"
	"testing"

	"github.com/rtbd/rtbd/rtb/money"
)

func Example() {
	micros, err := money.Parse("1.2345")
	fmt.Println(micros, err, money.Format(micros))
	_, err = money.Parse("1.2345000")
	fmt.Println(err)
	fmt.Println(money.FromFloat(0.1), money.FromFloat(1.2345671), money.FromFloat(1e300) == money.Max)
	fmt.Println(string(money.AppendDisplay(nil, 1_980_000_000, "JPY")))
	code, ok := money.Code("jpy")
	fmt.Println(code, ok, money.IsCode("jpy"))
	// Output:
	// 1234500 <nil> 1.2345
	// money: amount finer than a micro (at most 6 decimals)
	// 100000 1234568 true
	// ¥1,980
	// JPY true false
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := money.Parse("1.2345"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFromFloat(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = money.FromFloat(1.25)
		_ = money.FromFloat(1.2345671)
	}
}
