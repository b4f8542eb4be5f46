package faults

import (
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"strconv"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// The soak's plot: one small line chart per series, x in minutes, drawn
// with the standard library's image packages and x/image's fixed 7×13
// font: no plotting dependency for one picture.

// plotSeries is one panel: its title and a value per x (NaN: no sample,
// the line breaks).
type plotSeries struct {
	title string
	ys    []float64
}

const (
	plotCols     = 2
	plotPanelW   = 600
	plotPanelH   = 190
	plotHeader   = 28
	plotLeft     = 60 // room for the y labels
	plotRight    = 14
	plotTop      = 22 // the panel's title
	plotBottom   = 22 // the x labels
	plotFontRise = 10 // basicfont.Face7x13's ascent, near enough
)

var (
	plotInk   = color.RGBA{0x20, 0x20, 0x20, 0xff}
	plotGrid  = color.RGBA{0xd8, 0xd8, 0xd8, 0xff}
	plotLine  = color.RGBA{0x1f, 0x5f, 0xbf, 0xff}
	plotShade = color.RGBA{0xfb, 0xdc, 0xdc, 0xff}
)

// plotSoak draws the panels (xs in minutes, shared by every panel) and
// shades the [from, to] minutes of shade in each, into a PNG at path.
func plotSoak(path, title string, xs []float64, panels []plotSeries, shade [][2]float64) error {
	rows := (len(panels) + plotCols - 1) / plotCols
	img := image.NewRGBA(image.Rect(0, 0, plotCols*plotPanelW, plotHeader+rows*plotPanelH))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	plotText(img, 8, 18, title)
	xmax := 1.0
	for _, x := range xs {
		xmax = max(xmax, x)
	}
	for i, p := range panels {
		x0, y0 := (i%plotCols)*plotPanelW, plotHeader+(i/plotCols)*plotPanelH
		plotPanel(img, image.Rect(x0, y0, x0+plotPanelW, y0+plotPanelH), p, xs, xmax, shade)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// plotPanel draws one series in r: the y axis from 0 to a round number
// above its largest value.
func plotPanel(img *image.RGBA, r image.Rectangle, p plotSeries, xs []float64, xmax float64, shade [][2]float64) {
	area := image.Rect(r.Min.X+plotLeft, r.Min.Y+plotTop, r.Max.X-plotRight, r.Max.Y-plotBottom)
	plotText(img, area.Min.X, r.Min.Y+15, p.title)
	ymax := 0.0
	for _, y := range p.ys {
		if !math.IsNaN(y) {
			ymax = max(ymax, y)
		}
	}
	ymax = niceCeil(ymax)
	px := func(x float64) int { return area.Min.X + int(math.Round(x/xmax*float64(area.Dx()-1))) }
	py := func(y float64) int { return area.Max.Y - 1 - int(math.Round(y/ymax*float64(area.Dy()-1))) }

	for _, s := range shade {
		a, b := px(max(0, s[0])), px(min(xmax, s[1]))
		draw.Draw(img, image.Rect(a, area.Min.Y, b+1, area.Max.Y), image.NewUniform(plotShade), image.Point{}, draw.Src)
	}
	for _, frac := range []float64{0, 0.5, 1} {
		y := py(frac * ymax)
		plotHLine(img, area.Min.X, area.Max.X-1, y, plotGrid)
		label := formatTick(frac * ymax)
		plotText(img, area.Min.X-6-7*len(label), y+plotFontRise/2, label)
	}
	step := tickStep(xmax)
	for m := 0.0; m <= xmax+1e-9; m += step {
		x := px(m)
		plotVLine(img, x, area.Min.Y, area.Max.Y-1, plotGrid)
		label := formatTick(m)
		plotText(img, x-7*len(label)/2, area.Max.Y+plotFontRise+4, label)
	}
	plotVLine(img, area.Min.X, area.Min.Y, area.Max.Y-1, plotInk)
	plotHLine(img, area.Min.X, area.Max.X-1, area.Max.Y-1, plotInk)

	prev := image.Point{-1, -1}
	for i, y := range p.ys {
		if math.IsNaN(y) || i >= len(xs) {
			prev = image.Point{-1, -1}
			continue
		}
		pt := image.Pt(px(xs[i]), py(y))
		if prev.X < 0 {
			plotLineSeg(img, pt, pt, plotLine)
		} else {
			plotLineSeg(img, prev, pt, plotLine)
		}
		prev = pt
	}
}

// niceCeil is the smallest of 1, 2, 2.5, 5 × a power of ten at or above
// v·1.05 (1 for nothing above 0), so the top label reads round.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	v *= 1.05
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// tickStep is the minutes between x ticks: ten at most.
func tickStep(xmax float64) float64 {
	for _, s := range []float64{0.5, 1, 2, 5, 10, 15, 30, 60, 120} {
		if xmax/s <= 10 {
			return s
		}
	}
	return 240
}

func formatTick(v float64) string {
	if v >= 10 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func plotText(img *image.RGBA, x, y int, s string) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(plotInk), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func plotHLine(img *image.RGBA, x0, x1, y int, c color.RGBA) {
	for x := x0; x <= x1; x++ {
		img.SetRGBA(x, y, c)
	}
}

func plotVLine(img *image.RGBA, x, y0, y1 int, c color.RGBA) {
	for y := y0; y <= y1; y++ {
		img.SetRGBA(x, y, c)
	}
}

// plotLineSeg draws a segment two pixels thick (Bresenham).
func plotLineSeg(img *image.RGBA, a, b image.Point, c color.RGBA) {
	dx, dy := abs(b.X-a.X), -abs(b.Y-a.Y)
	sx, sy := sign(b.X-a.X), sign(b.Y-a.Y)
	err := dx + dy
	for x, y := a.X, a.Y; ; {
		img.SetRGBA(x, y, c)
		img.SetRGBA(x, y+1, c)
		if x == b.X && y == b.Y {
			return
		}
		e2 := 2 * err
		if e2 >= dy {
			err += dy
			x += sx
		}
		if e2 <= dx {
			err += dx
			y += sy
		}
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func sign(n int) int {
	switch {
	case n > 0:
		return 1
	case n < 0:
		return -1
	}
	return 0
}
