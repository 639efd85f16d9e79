// The service definitions, imported as text (`with { type: "text" }`): `bun build --compile`
// embeds them in the binary, so the endpoint needs no files beside it.
declare module "*.proto" {
  const text: string;
  export default text;
}
