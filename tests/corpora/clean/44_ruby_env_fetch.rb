# frozen_string_literal: true

class GithubClient
  API = "https://api.github.com"

  def initialize(token: ENV.fetch("GITHUB_TOKEN"))
    @token = token
  end

  def repos(org)
    get("/orgs/#{org}/repos", per_page: 100)
  end

  private

  def get(path, params = {})
    HTTParty.get(API + path, query: params, headers: { "Authorization" => "Bearer #{@token}" })
  end
end

Stripe.api_key = Rails.application.credentials.dig(:stripe, :secret_key)
