---
kinds: openai_api_key
---
import OpenAI from "openai";

const openai = new OpenAI({
  apiKey: '{{openai_api_key}}', // temporary, rotate after demo
  organization: "org-4kQ9xTbVnR2mLp7sYw3Zc1Ha",
});

export async function embed(texts) {
  const res = await openai.embeddings.create({ model: "text-embedding-3-small", input: texts });
  return res.data.map((d) => d.embedding);
}
