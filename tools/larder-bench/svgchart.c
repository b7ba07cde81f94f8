/*
 * svgchart.c - writes the line charts of svgchart.h: plain SVG 1.1, no
 * script, readable in any browser and on GitHub.
 */
#include "svgchart.h"

#include <stdio.h>

#define W 900.0
#define H 380.0
#define LEFT 80.0
#define RIGHT 20.0
#define TOP 40.0
#define BOTTOM 60.0
#define TICKS 5

static double px(double x, double x_max)
{
	return LEFT + (x_max > 0 ? x / x_max : 0) * (W - LEFT - RIGHT);
}

static double py(double y, double y_max)
{
	return H - BOTTOM - (y_max > 0 ? y / y_max : 0) * (H - TOP - BOTTOM);
}

int svg_line_chart(const char *path, const char *title, const char *x_label,
		   const char *y_label, double y_max, const struct svg_series *series,
		   size_t n_series, const struct svg_marks *marks)
{
	double x_max = 0, y_top = 0;
	for (size_t s = 0; s < n_series; s++)
		for (size_t i = 0; i < series[s].n; i++) {
			x_max = series[s].x[i] > x_max ? series[s].x[i] : x_max;
			y_top = series[s].y[i] > y_top ? series[s].y[i] : y_top;
		}
	if (y_max <= 0)
		y_max = y_top * 1.05;
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		   "font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"15\" text-anchor=\"middle\">%s</text>\n",
		W / 2, title);
	for (int t = 0; t <= TICKS; t++) {
		double xv = x_max * t / TICKS, yv = y_max * t / TICKS;
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
			LEFT, py(yv, y_max), W - RIGHT, py(yv, y_max));
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n", LEFT - 6,
			py(yv, y_max) + 4, yv);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.4g</text>\n",
			px(xv, x_max), H - BOTTOM + 18, xv);
	}
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n",
		LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM);
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n",
		LEFT, TOP, LEFT, H - BOTTOM);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n",
		(LEFT + W - RIGHT) / 2, H - 20, x_label);
	fprintf(f, "<text x=\"18\" y=\"%.0f\" text-anchor=\"middle\" "
		   "transform=\"rotate(-90 18 %.0f)\">%s</text>\n",
		(TOP + H - BOTTOM) / 2, (TOP + H - BOTTOM) / 2, y_label);
	for (size_t m = 0; marks && m < marks->n; m++) {
		double x = px(marks->x[m], x_max);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#999\" "
			   "stroke-dasharray=\"4 3\"/>\n", x, TOP, x, H - BOTTOM);
		fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" font-size=\"10\" fill=\"#555\">%s</text>\n",
			x + 3, TOP + 10, marks->label[m]);
	}
	for (size_t s = 0; s < n_series; s++) {
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" points=\"",
			series[s].color);
		for (size_t i = 0; i < series[s].n; i++)
			fprintf(f, "%.1f,%.1f ", px(series[s].x[i], x_max),
				py(series[s].y[i] > y_max ? y_max : series[s].y[i], y_max));
		fprintf(f, "\"/>\n");
		double ly = TOP + 14 + 16.0 * (double)s;
		fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" "
			   "stroke-width=\"3\"/>\n", W - RIGHT - 230, ly, W - RIGHT - 210, ly,
			series[s].color);
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", W - RIGHT - 204, ly + 4,
			series[s].name);
	}
	fprintf(f, "</svg>\n");
	return fclose(f) == 0 ? 0 : -1;
}
