// The dashboard's static files, imported as text (`with { type: "text" }`): `bun build --compile`
// embeds them in the binary, so the dashboard works offline and needs no files beside it.
declare module "*.css" {
  const text: string;
  export default text;
}
declare module "*/static/dashboard.js" {
  const text: string;
  export default text;
}
declare module "uplot/dist/uPlot.iife.min.js" {
  const text: string;
  export default text;
}
