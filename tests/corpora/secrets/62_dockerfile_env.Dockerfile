---
kinds: env_secret github_token
---
FROM node:20-alpine AS build
WORKDIR /app
# FIXME: build secrets baked into the image layer
ARG GITHUB_TOKEN={{github_token}}
ENV NPM_TOKEN=npm_{{opaque_token}}
COPY package*.json .npmrc ./
RUN npm ci && rm -f .npmrc
COPY . .
RUN npm run build
