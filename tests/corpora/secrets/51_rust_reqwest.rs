---
kinds: anthropic_api_key
---
use reqwest::blocking::Client;
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let api_key = "{{anthropic_api_key}}";
    let body = json!({"model": "claude-haiku-4-5", "max_tokens": 256,
                      "messages": [{"role": "user", "content": "Write a haiku about Rust."}]});
    let resp = Client::new()
        .post("https://api.anthropic.com/v1/messages")
        .header("x-api-key", api_key)
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()?;
    println!("{}", resp.text()?);
    Ok(())
}
