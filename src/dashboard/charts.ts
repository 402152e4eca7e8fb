/** The window's series as uPlot charts (bundled with the page: no third-party request). */
import uPlot from "uplot"
import type { Summary } from "./api.ts"
import { byId } from "./render.ts"

interface Chart {
  plot: uPlot | undefined
}

const charts = new Map<string, Chart>()

const sizeOf = (container: HTMLElement) => ({ width: Math.max(240, container.clientWidth - 8), height: 160 })

/** Small amounts (a call costs millionths of a dollar) keep two significant digits on the axis. */
const compact = (_: uPlot, values: Array<number>) =>
  values.map((value) =>
    value === 0 ? "0" : Math.abs(value) < 0.001 ? value.toExponential(1) : Number(value.toPrecision(2)).toString()
  )

const draw = (id: string, labels: ReadonlyArray<string>, data: uPlot.AlignedData) => {
  const container = byId(id)
  const chart = charts.get(id) ?? { plot: undefined }
  charts.set(id, chart)
  if (chart.plot !== undefined && chart.plot.series.length === labels.length + 1) {
    chart.plot.setData(data)
    chart.plot.setSize(sizeOf(container))
    return
  }
  chart.plot?.destroy()
  const colors = ["#0b5cad", "#b3261e", "#1a7f37"]
  chart.plot = new uPlot({
    ...sizeOf(container),
    series: [{}, ...labels.map((label, i) => ({ label, stroke: colors[i % colors.length]!, width: 2 }))],
    axes: [{}, { size: 70, values: compact }],
    legend: { show: true }
  }, data, container)
}

export const drawCharts = (summary: Summary) => {
  const times = summary.series.map((point) => Date.parse(point.at) / 1000)
  draw("chart-requests", ["requests", "errors"], [
    times,
    summary.series.map((point) => point.requests),
    summary.series.map((point) => point.errors)
  ])
  draw("chart-errors", ["error rate %"], [
    times,
    summary.series.map((point) => (point.requests === 0 ? null : (100 * point.errors) / point.requests))
  ])
  draw("chart-spend", ["spend"], [times, summary.series.map((point) => Number(point.spend_usd))])
  draw("chart-tokens", ["input", "output"], [
    times,
    summary.series.map((point) => point.input_tokens),
    summary.series.map((point) => point.output_tokens)
  ])
  draw("chart-latency", ["p95"], [times, summary.series.map((point) => point.p95_latency_ms)])
}
