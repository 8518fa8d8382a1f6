package convert

import "strings"

// Suggest returns the name among known that name is most likely a misspelling of: one edit away
// (a letter added, dropped, changed, or two neighbours swapped, ignoring case), or two for
// names of more than four letters. It returns "" when none is that close, or name is known.
func Suggest(name string, known []string) string {
	best, bestDistance := "", 0
	for _, k := range known {
		if k == name {
			return ""
		}
		limit := 1
		if len(k) > 4 {
			limit = 2
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d <= limit && (best == "" || d < bestDistance) {
			best, bestDistance = k, d
		}
	}
	return best
}

// editDistance counts the single-letter insertions, deletions, substitutions and swaps of
// neighbouring letters that turn a into b (optimal string alignment distance).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2, prev, cur := make([]int, len(rb)+1), make([]int, len(rb)+1), make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
