package nodeoverlay

import (
	"fmt"
	"strconv"
	"strings"
)

// AdjustedPrice applies an overlay's price or priceAdjustment to a price in $/hour: an unsigned
// number replaces it ("0.25"); a signed one is added ("-0.05", "+1.2"); a signed percentage
// scales it ("-20%", "+10%"). The result is never below zero. An empty change leaves the price.
func AdjustedPrice(price float64, change string) (float64, error) {
	if change == "" {
		return price, nil
	}
	if !strings.HasPrefix(change, "+") && !strings.HasPrefix(change, "-") {
		p, err := strconv.ParseFloat(change, 64)
		if err != nil || p < 0 {
			return 0, fmt.Errorf("price %q is not a non-negative number", change)
		}
		return p, nil
	}
	var adjusted float64
	if pct, ok := strings.CutSuffix(change, "%"); ok {
		n, err := strconv.ParseFloat(pct, 64)
		if err != nil {
			return 0, fmt.Errorf("priceAdjustment %q is not a signed percentage such as -20%%", change)
		}
		adjusted = price * (1 + n/100)
	} else {
		n, err := strconv.ParseFloat(change, 64)
		if err != nil {
			return 0, fmt.Errorf("priceAdjustment %q is not a signed number such as -0.05", change)
		}
		adjusted = price + n
	}
	return max(adjusted, 0), nil
}
