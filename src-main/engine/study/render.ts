/**
 * Chart rendering for reports: ECharts server-side SVG (no DOM), rasterised to PNG with resvg
 * (@resvg/resvg-js, a prebuilt native module that needs no network at run time). Text uses the
 * system's sans-serif fonts.
 */
import * as echarts from 'echarts';

export interface RenderedChart {
  svg: string;
  png: Buffer;
}

export function renderSvg(option: Record<string, unknown>, width = 900, height = 480): string {
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width, height });
  try {
    chart.setOption(option as Parameters<typeof chart.setOption>[0]);
    return chart.renderToSVGString();
  } finally {
    chart.dispose();
  }
}

export async function svgToPng(svg: string, width: number): Promise<Buffer> {
  // Loaded on first use: only report writers pay for the native module.
  const { Resvg } = await import('@resvg/resvg-js');
  const resvg = new Resvg(svg, { fitTo: { mode: 'width', value: width }, background: '#ffffff', font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' } });
  return Buffer.from(resvg.render().asPng());
}

export async function renderChart(option: Record<string, unknown>, width = 900, height = 480): Promise<RenderedChart> {
  const svg = renderSvg(option, width, height);
  return { svg, png: await svgToPng(svg, width * 2) };
}
