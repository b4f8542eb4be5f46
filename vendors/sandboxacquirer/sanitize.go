package sandboxacquirer

import "strings"

// folded maps Latin letters with diacritics to their base letter.
var folded = func() map[rune]rune {
	m := map[rune]rune{}
	for base, letters := range map[rune]string{
		'A': "ÀÁÂÃÄÅàáâãäåĀāĂăĄą", 'C': "ÇçĆćČč", 'E': "ÈÉÊËèéêëĒēĘęĚě", 'I': "ÌÍÎÏìíîïĪī",
		'N': "ÑñŃńŇň", 'O': "ÒÓÔÕÖØòóôõöøŌō", 'U': "ÙÚÛÜùúûüŪū", 'Y': "ÝýÿŸ",
		'S': "ŚśŠš", 'Z': "ŹźŻżŽž", 'L': "Łł", 'D': "Đđ", 'G': "Ğğ",
	} {
		for _, r := range letters {
			m[r] = base
		}
	}
	return m
}()

// Sanitize makes s fit a QRIS text field of at most limit characters: letters
// in upper case, Latin letters with diacritics folded to their base letter
// ("Café" → "CAFE"), other characters outside printable ASCII dropped,
// runs of white space collapsed to one space, the result trimmed and cut
// to limit characters (without a trailing space). It returns "" when nothing
// is left.
func Sanitize(s string, limit int) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if f, ok := folded[r]; ok {
			r = f
		}
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == '\u00a0':
			space = b.Len() > 0
			continue
		case r < 0x20 || r > 0x7E:
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		b.WriteRune(r)
	}
	out := b.String()
	if limit < 0 {
		limit = 0
	}
	if len(out) > limit {
		out = strings.TrimRight(out[:limit], " ")
	}
	return out
}
