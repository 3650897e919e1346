import { describe, expect, it } from 'vitest';
import { normalizeLmStudioUrl, normalizeOllamaHost, parseLmStudioUrls } from '../../src/config/urls.ts';

describe('backend URLs', () => {
  it('accepts LM Studio URLs with or without /v1 and a scheme', () => {
    expect(normalizeLmStudioUrl('http://localhost:1234/v1/')).toBe('http://localhost:1234');
    expect(normalizeLmStudioUrl('box:1234')).toBe('http://box:1234');
    expect(parseLmStudioUrls('a:1, ,b:2/v1')).toEqual(['http://a:1', 'http://b:2']);
  });

  it('reads OLLAMA_HOST the way Ollama does', () => {
    expect(normalizeOllamaHost('0.0.0.0')).toBe('http://127.0.0.1:11434');
    expect(normalizeOllamaHost('0.0.0.0:8080')).toBe('http://127.0.0.1:8080');
    expect(normalizeOllamaHost('gpu-box')).toBe('http://gpu-box:11434');
    expect(normalizeOllamaHost(':11500')).toBe('http://127.0.0.1:11500');
    expect(normalizeOllamaHost('https://ollama.example')).toBe('https://ollama.example:443');
    expect(normalizeOllamaHost('http://[::1]:11434/')).toBe('http://[::1]:11434');
  });
});
