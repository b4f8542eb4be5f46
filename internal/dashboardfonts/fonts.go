// Package dashboardfonts holds the fonts of the queue dashboard (asynqmon),
// which otherwise loads them from Google Fonts: on an operator network
// without internet access its icons would show as words. The Material Icons
// font is Apache-2.0 (LICENSE beside it).
package dashboardfonts

import "embed"

// FS holds fonts.css and the font it names.
//
//go:embed fonts.css MaterialIcons-Regular.woff2 LICENSE
var FS embed.FS
