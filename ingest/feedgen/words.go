package feedgen

// category is one product category: a Google-product-taxonomy-like path,
// the nouns, materials and variants that make sense in it, and a list price
// range in US cents (converted to the feed's currency).
type category struct {
	path      string
	nouns     []string
	materials []string
	variants  []string
	lo, hi    int64 // US cents
}

var categories = [...]category{
	{"Apparel & Accessories > Clothing > Shirts & Tops",
		[]string{"Crew T-Shirt", "Oxford Shirt", "Polo Shirt", "Henley", "Tank Top", "Long Sleeve Tee"},
		[]string{"Cotton", "Organic Cotton", "Linen", "Merino Wool", "Recycled Polyester", "Pima Cotton"},
		[]string{"XS", "S", "M", "L", "XL", "XXL"}, 1200, 8900},
	{"Apparel & Accessories > Clothing > Pants",
		[]string{"Chino Pants", "Slim Jeans", "Jogger Pants", "Cargo Shorts", "Wide Leg Trousers"},
		[]string{"Cotton Twill", "Stretch Denim", "Linen Blend", "Corduroy", "Nylon"},
		[]string{"W28", "W30", "W32", "W34", "W36"}, 2500, 12000},
	{"Apparel & Accessories > Shoes",
		[]string{"Running Shoes", "Leather Sneakers", "Chelsea Boots", "Slip-On Loafers", "Trail Sandals"},
		[]string{"Mesh", "Full-Grain Leather", "Suede", "Canvas", "Knit"},
		[]string{"24.5 cm", "25 cm", "26 cm", "27 cm", "28 cm", "US 9", "US 10"}, 4500, 22000},
	{"Apparel & Accessories > Handbags, Wallets & Cases > Wallets & Money Clips",
		[]string{"Bifold Wallet", "Card Case", "Zip Wallet", "Coin Purse"},
		[]string{"Leather", "Vegan Leather", "Canvas", "Nylon"},
		[]string{"One Size"}, 1500, 15000},
	{"Home & Garden > Kitchen & Dining > Cookware & Bakeware > Cookware",
		[]string{"Frying Pan", "Dutch Oven", "Saucepan", "Wok", "Stock Pot"},
		[]string{"Cast Iron", "Stainless Steel", "Carbon Steel", "Enameled Cast Iron", "Nonstick Aluminum"},
		[]string{"20 cm", "24 cm", "26 cm", "28 cm", "3 qt", "5.5 qt"}, 1800, 30000},
	{"Home & Garden > Kitchen & Dining > Tableware > Drinkware",
		[]string{"Coffee Mug", "Tumbler", "Wine Glass Set", "Water Bottle"},
		[]string{"Ceramic", "Borosilicate Glass", "Insulated Steel", "Porcelain"},
		[]string{"350 ml", "500 ml", "750 ml", "Set of 2", "Set of 4"}, 800, 6000},
	{"Home & Garden > Decor > Throw Pillows",
		[]string{"Throw Pillow", "Cushion Cover", "Lumbar Pillow"},
		[]string{"Linen", "Velvet", "Wool", "Cotton Canvas"},
		[]string{"45 x 45 cm", "50 x 50 cm", "30 x 50 cm"}, 1500, 7000},
	{"Home & Garden > Lighting > Lamps",
		[]string{"Table Lamp", "Floor Lamp", "Desk Lamp", "Pendant Light"},
		[]string{"Brass", "Oak", "Ceramic", "Matte Steel", "Rattan"},
		[]string{"E26", "LED", "Dimmable LED"}, 3000, 25000},
	{"Electronics > Audio > Audio Components > Headphones & Headsets",
		[]string{"Wireless Earbuds", "Over-Ear Headphones", "Noise Cancelling Headphones", "Sports Earphones"},
		[]string{"Bluetooth 5.3", "Hybrid ANC", "Open-Ear", "Wired"},
		[]string{"Standard", "with Charging Case", "Gaming Edition"}, 2000, 40000},
	{"Electronics > Electronics Accessories > Power > Power Banks",
		[]string{"Power Bank", "Charging Stand", "Wall Charger", "USB-C Cable"},
		[]string{"GaN", "Magnetic", "Fast Charge", "Braided"},
		[]string{"10000 mAh", "20000 mAh", "65 W", "1 m", "2 m"}, 1000, 9000},
	{"Sporting Goods > Outdoor Recreation > Camping & Hiking > Tents",
		[]string{"Dome Tent", "Backpacking Tent", "Sleeping Bag", "Camp Chair"},
		[]string{"Ultralight Nylon", "Ripstop Polyester", "Down", "Aluminum"},
		[]string{"1 Person", "2 Person", "4 Person", "-5 C", "Regular"}, 3000, 45000},
	{"Sporting Goods > Exercise & Fitness > Yoga & Pilates",
		[]string{"Yoga Mat", "Foam Roller", "Resistance Band Set", "Yoga Block"},
		[]string{"Natural Rubber", "TPE", "Cork", "Latex-Free"},
		[]string{"4 mm", "6 mm", "Light", "Medium", "Heavy"}, 1200, 9000},
	{"Health & Beauty > Personal Care > Cosmetics > Skin Care",
		[]string{"Face Serum", "Moisturizer", "Cleansing Oil", "Sunscreen SPF 50", "Sheet Mask Pack"},
		[]string{"Vitamin C", "Hyaluronic", "Ceramide", "Green Tea", "Rice Bran"},
		[]string{"30 ml", "50 ml", "100 ml", "10 Sheets"}, 900, 8000},
	{"Luggage & Bags > Backpacks",
		[]string{"Daypack", "Laptop Backpack", "Rolltop Backpack", "Travel Backpack"},
		[]string{"Water-Resistant Nylon", "Waxed Canvas", "Recycled PET", "Cordura"},
		[]string{"18 L", "22 L", "28 L", "35 L"}, 3500, 20000},
	{"Toys & Games > Toys > Building Toys",
		[]string{"Block Set", "Marble Run", "Magnetic Tiles", "Robot Kit"},
		[]string{"Wooden", "ABS", "Bamboo", "STEM"},
		[]string{"60 Pieces", "120 Pieces", "250 Pieces", "Ages 3+", "Ages 8+"}, 1500, 12000},
	{"Food, Beverages & Tobacco > Beverages > Coffee",
		[]string{"Coffee Beans", "Drip Bags", "Cold Brew Pack", "Espresso Roast"},
		[]string{"Single Origin", "Organic", "Decaf", "Fair Trade"},
		[]string{"200 g", "500 g", "1 kg", "10 Bags", "30 Bags"}, 900, 4500},
}

var adjectives = [...]string{
	"Classic", "Organic", "Lightweight", "Premium", "Everyday", "Vintage", "Essential",
	"Ultra", "Compact", "Heritage", "Modern", "Relaxed", "Signature", "Eco", "Pro",
	"Soft", "Urban", "Travel", "Studio", "Weekend",
}

var colors = [...]string{
	"Navy", "Black", "White", "Heather Grey", "Olive", "Burgundy", "Sand", "Sky Blue",
	"Charcoal", "Forest Green", "Ivory", "Terracotta", "Mustard", "Indigo", "Blush",
}

var brands = [...]string{
	"Brand X", "Acme", "Northwind", "Blue Harbor", "Kitsune Works", "Maple & Co",
	"Urban Trail", "Sakura Living", "Ironwood", "Luna Bay", "Evergreen Outfitters",
	"Tanaka Craft", "Nordlys", "Atlas Supply", "Hoshi", "Coastline", "Redwood Lab",
	"Minato Goods", "Fjord", "Solstice", "Kumo", "Ridge & Pine", "Aoi Studio", "Parkside",
}

var sentences = [...]string{
	"Made to last with reinforced stitching.",
	"Free shipping on orders over the threshold.",
	"Designed in Tokyo, tested on the trail.",
	"Machine washable and quick drying.",
	"A customer favourite, now restocked.",
	"Ships in recyclable packaging.",
	"Pairs well with the rest of the collection.",
	"Backed by a two-year warranty.",
	"Limited run: colours may sell out.",
	"Easy returns within 30 days.",
	"Ethically sourced materials.",
	"Lightweight enough for everyday carry.",
	"Rated 4.6 out of 5 by verified buyers.",
	"Gift wrapping available at checkout.",
	"Crafted by a small family workshop.",
	"Tested for durability in real use.",
}

// imageSizes are common product image sizes (width, height) in pixels.
var imageSizes = [...][2]int32{
	{300, 300}, {600, 600}, {800, 800}, {1000, 1000}, {1200, 1200},
	{1200, 628}, {640, 480}, {1080, 1080}, {500, 500}, {1080, 1350},
}

// currencyInfo converts US-cent price ranges into a currency and rounds
// them the way shops price in it.
type currencyInfo struct {
	perCent int64 // micros of the currency per US cent
	round   int64 // list prices are multiples of this, in micros ...
	ending  int64 // ... minus this (e.g. 1980 yen, 19.99 dollars)
	minor   int64 // smallest amount shown, in micros (sale prices round to it)
}

// currencyFor returns approximate exchange rates and pricing habits;
// currencies not listed are priced like USD.
func currencyFor(code string) currencyInfo {
	switch code {
	case "USD":
		return currencyInfo{10_000, 1_000_000, 10_000, 10_000}
	case "EUR":
		return currencyInfo{9_200, 1_000_000, 10_000, 10_000}
	case "GBP":
		return currencyInfo{7_900, 1_000_000, 10_000, 10_000}
	case "CHF":
		return currencyInfo{8_800, 1_000_000, 50_000, 10_000}
	case "CAD":
		return currencyInfo{13_600, 1_000_000, 10_000, 10_000}
	case "AUD":
		return currencyInfo{15_000, 1_000_000, 50_000, 10_000}
	case "NZD":
		return currencyInfo{16_500, 1_000_000, 10_000, 10_000}
	case "SGD":
		return currencyInfo{13_500, 1_000_000, 100_000, 10_000}
	case "HKD":
		return currencyInfo{78_000, 1_000_000, 100_000, 100_000}
	case "CNY":
		return currencyInfo{72_000, 1_000_000, 10_000, 10_000}
	case "TWD":
		return currencyInfo{320_000, 10_000_000, 1_000_000, 1_000_000}
	case "JPY":
		return currencyInfo{1_500_000, 100_000_000, 20_000_000, 1_000_000}
	case "KRW":
		return currencyInfo{13_500_000, 1_000_000_000, 100_000_000, 1_000_000}
	case "INR":
		return currencyInfo{830_000, 100_000_000, 1_000_000, 1_000_000}
	case "THB":
		return currencyInfo{360_000, 10_000_000, 1_000_000, 1_000_000}
	case "IDR":
		return currencyInfo{160_000_000, 1_000_000_000, 0, 1_000_000}
	case "VND":
		return currencyInfo{250_000_000, 1_000_000_000, 0, 1_000_000}
	case "PHP":
		return currencyInfo{560_000, 1_000_000, 10_000, 10_000}
	case "MYR":
		return currencyInfo{47_000, 1_000_000, 10_000, 10_000}
	case "SEK":
		return currencyInfo{104_000, 1_000_000, 0, 10_000}
	case "NOK":
		return currencyInfo{106_000, 1_000_000, 0, 10_000}
	case "DKK":
		return currencyInfo{69_000, 1_000_000, 50_000, 10_000}
	}
	return currencyInfo{10_000, 1_000_000, 10_000, 10_000}
}
