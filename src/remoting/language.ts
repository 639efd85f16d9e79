/**
 * LanguageCode: a name in JSON headers, one byte in ROCKETMQ headers (table 1.5 of the wire
 * reference). Unknown names are kept as they came: a server must not reject a peer for its language.
 */
const LANGUAGES = ["JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO", "PHP", "OMS", "RUST", "NODE_JS"] as const;

const BY_NAME = new Map<string, number>(LANGUAGES.map((name, i) => [name, i]));

export function languageToByte(name: string): number {
  return BY_NAME.get(name) ?? BY_NAME.get("OTHER")!;
}

export function languageFromByte(code: number): string {
  return LANGUAGES[code] ?? "OTHER";
}
