package rollout

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxOrdinal is the largest ordinal: pod names leave room for five digits
// (v1alpha1.MaxOrdinalDigits). Past it, ordinals are handed out again from
// the lowest one no placement holds, and only while every placement can
// be seen.
const MaxOrdinal = 99999

// FormatOrdinals writes sorted ordinals as ranges, "0-2,5,7-8": the form
// status records them in. An empty list is "".
func FormatOrdinals(ordinals []int) string {
	var b strings.Builder
	for i := 0; i < len(ordinals); {
		j := i
		for j+1 < len(ordinals) && ordinals[j+1] == ordinals[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ordinals[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(ordinals[j]))
		}
		i = j + 1
	}
	return b.String()
}

// ParseOrdinals reads what FormatOrdinals wrote. The ordinals come back
// sorted and without duplicates; an error says what is malformed (a
// status edited by hand, say).
func ParseOrdinals(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseOrdinal(lo)
		if err != nil {
			return nil, fmt.Errorf("ordinals %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = parseOrdinal(hi); err != nil {
				return nil, fmt.Errorf("ordinals %q: %w", s, err)
			}
		}
		if b < a {
			return nil, fmt.Errorf("ordinals %q: range %s is backwards", s, part)
		}
		for o := a; o <= b; o++ {
			out = append(out, o)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func parseOrdinal(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > MaxOrdinal {
		return 0, fmt.Errorf("%q is not an ordinal from 0 to %d", s, MaxOrdinal)
	}
	return n, nil
}
