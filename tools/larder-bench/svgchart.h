/*
 * svgchart.h - a minimal SVG line chart for larder-bench's timelines
 * (capacity per cache and throughput over time in `--pool`).
 */
#ifndef LARDER_BENCH_SVGCHART_H
#define LARDER_BENCH_SVGCHART_H

#include <stddef.h>

struct svg_series {
	const char *name;
	const char *color; /* any SVG colour */
	const double *x, *y;
	size_t n;
};

/* Vertical marks across the plot (phase changes), each with a label. */
struct svg_marks {
	const double *x;
	const char *const *label;
	size_t n;
};

/*
 * Writes a chart of the series to path: axes from 0 to the largest x and y
 * (or y_max when > 0), five ticks each, a legend, the marks. Returns 0, or
 * -1 when the file cannot be written.
 */
int svg_line_chart(const char *path, const char *title, const char *x_label,
		   const char *y_label, double y_max, const struct svg_series *series,
		   size_t n_series, const struct svg_marks *marks);

#endif /* LARDER_BENCH_SVGCHART_H */
