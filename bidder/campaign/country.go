package campaign

// countryPairs is ISO 3166-1: the 249 officially assigned countries, each as
// its alpha-2 code followed by its alpha-3 code (ADAND = Andorra). Deleted
// and exceptionally reserved codes (UK, SU, YU, ...) and user-assigned ones
// (XK Kosovo) are not in it.
const countryPairs = "" +
	"ADANDAEAREAFAFGAGATGAIAIAALALBAMARMAOAGOAQATAARARG" +
	"ASASMATAUTAUAUSAWABWAXALAAZAZEBABIHBBBRBBDBGDBEBEL" +
	"BFBFABGBGRBHBHRBIBDIBJBENBLBLMBMBMUBNBRNBOBOLBQBES" +
	"BRBRABSBHSBTBTNBVBVTBWBWABYBLRBZBLZCACANCCCCKCDCOD" +
	"CFCAFCGCOGCHCHECICIVCKCOKCLCHLCMCMRCNCHNCOCOLCRCRI" +
	"CUCUBCVCPVCWCUWCXCXRCYCYPCZCZEDEDEUDJDJIDKDNKDMDMA" +
	"DODOMDZDZAECECUEEESTEGEGYEHESHERERIESESPETETHFIFIN" +
	"FJFJIFKFLKFMFSMFOFROFRFRAGAGABGBGBRGDGRDGEGEOGFGUF" +
	"GGGGYGHGHAGIGIBGLGRLGMGMBGNGINGPGLPGQGNQGRGRCGSSGS" +
	"GTGTMGUGUMGWGNBGYGUYHKHKGHMHMDHNHNDHRHRVHTHTIHUHUN" +
	"IDIDNIEIRLILISRIMIMNININDIOIOTIQIRQIRIRNISISLITITA" +
	"JEJEYJMJAMJOJORJPJPNKEKENKGKGZKHKHMKIKIRKMCOMKNKNA" +
	"KPPRKKRKORKWKWTKYCYMKZKAZLALAOLBLBNLCLCALILIELKLKA" +
	"LRLBRLSLSOLTLTULULUXLVLVALYLBYMAMARMCMCOMDMDAMEMNE" +
	"MFMAFMGMDGMHMHLMKMKDMLMLIMMMMRMNMNGMOMACMPMNPMQMTQ" +
	"MRMRTMSMSRMTMLTMUMUSMVMDVMWMWIMXMEXMYMYSMZMOZNANAM" +
	"NCNCLNENERNFNFKNGNGANINICNLNLDNONORNPNPLNRNRUNUNIU" +
	"NZNZLOMOMNPAPANPEPERPFPYFPGPNGPHPHLPKPAKPLPOLPMSPM" +
	"PNPCNPRPRIPSPSEPTPRTPWPLWPYPRYQAQATREREUROROURSSRB" +
	"RURUSRWRWASASAUSBSLBSCSYCSDSDNSESWESGSGPSHSHNSISVN" +
	"SJSJMSKSVKSLSLESMSMRSNSENSOSOMSRSURSSSSDSTSTPSVSLV" +
	"SXSXMSYSYRSZSWZTCTCATDTCDTFATFTGTGOTHTHATJTJKTKTKL" +
	"TLTLSTMTKMTNTUNTOTONTRTURTTTTOTVTUVTWTWNTZTZAUAUKR" +
	"UGUGAUMUMIUSUSAUYURYUZUZBVAVATVCVCTVEVENVGVGBVIVIR" +
	"VNVNMVUVUTWFWLFWSWSMYEYEMYTMYTZAZAFZMZMBZWZWE"

// country is a country's alpha-3 code and its index in countryPairs (0-248).
type country struct {
	a3  string
	idx uint8
}

// alpha3 maps alpha-2 and alpha-3 codes (upper case) to the country. It is
// built once and only read afterwards.
var alpha3 = func() map[string]country {
	m := make(map[string]country, 2*len(countryPairs)/5)
	for i := 0; i+5 <= len(countryPairs); i += 5 {
		c := country{a3: countryPairs[i+2 : i+5], idx: uint8(i / 5)}
		m[countryPairs[i:i+2]] = c
		m[c.a3] = c
	}
	return m
}()

// CountryAlpha3 returns the ISO 3166-1 alpha-3 code for an alpha-2 or
// alpha-3 country code in any case ("jp", "JP", "jpn" => "JPN"), and false if
// code is not an assigned ISO country. It allocates nothing.
func CountryAlpha3(code string) (string, bool) {
	c, ok := lookupCountry(code)
	return c.a3, ok
}

func lookupCountry(code string) (country, bool) {
	var buf [3]byte
	if len(code) < 2 || len(code) > 3 {
		return country{}, false
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		buf[i] = c
	}
	c, ok := alpha3[string(buf[:len(code)])]
	return c, ok
}
