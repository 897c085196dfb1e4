export interface Credentials {
  username: string;
  password: string;
  otp?: string;
}

export type TokenPair = {
  accessToken: string;
  refreshToken: string;
  expiresAt: number;
};

export interface ClientOptions {
  apiKey?: string;
  baseURL?: string;
  timeout?: number;
  fetch?: typeof globalThis.fetch;
}

export function redactHeaders(headers: Record<string, string>): Record<string, string> {
  const { authorization, cookie, ...rest } = headers;
  return { ...rest, authorization: authorization ? "[hidden]" : "", cookie: "" };
}

const password: string = form.get("password") as string;
const token = await getToken({ scope: "repo" });
