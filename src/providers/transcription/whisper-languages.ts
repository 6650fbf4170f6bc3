/** Whisper reports the language by name (verbose_json); callers get ISO-639-1 codes. */
export const WHISPER_LANGUAGE_CODES: Record<string, string> = {
  afrikaans: 'af', albanian: 'sq', amharic: 'am', arabic: 'ar', armenian: 'hy', assamese: 'as', azerbaijani: 'az',
  bashkir: 'ba', basque: 'eu', belarusian: 'be', bengali: 'bn', bosnian: 'bs', breton: 'br', bulgarian: 'bg',
  burmese: 'my', cantonese: 'yue', catalan: 'ca', chinese: 'zh', croatian: 'hr', czech: 'cs', danish: 'da',
  dutch: 'nl', english: 'en', estonian: 'et', faroese: 'fo', finnish: 'fi', french: 'fr', galician: 'gl',
  georgian: 'ka', german: 'de', greek: 'el', gujarati: 'gu', haitian: 'ht', 'haitian creole': 'ht', hausa: 'ha',
  hawaiian: 'haw', hebrew: 'he', hindi: 'hi', hungarian: 'hu', icelandic: 'is', indonesian: 'id', italian: 'it',
  japanese: 'ja', javanese: 'jw', kannada: 'kn', kazakh: 'kk', khmer: 'km', korean: 'ko', lao: 'lo', latin: 'la',
  latvian: 'lv', lingala: 'ln', lithuanian: 'lt', luxembourgish: 'lb', macedonian: 'mk', malagasy: 'mg',
  malay: 'ms', malayalam: 'ml', maltese: 'mt', maori: 'mi', marathi: 'mr', mongolian: 'mn', nepali: 'ne',
  norwegian: 'no', nynorsk: 'nn', occitan: 'oc', pashto: 'ps', persian: 'fa', polish: 'pl', portuguese: 'pt',
  punjabi: 'pa', romanian: 'ro', russian: 'ru', sanskrit: 'sa', serbian: 'sr', shona: 'sn', sindhi: 'sd',
  sinhala: 'si', slovak: 'sk', slovenian: 'sl', somali: 'so', spanish: 'es', sundanese: 'su', swahili: 'sw',
  swedish: 'sv', tagalog: 'tl', tajik: 'tg', tamil: 'ta', tatar: 'tt', telugu: 'te', thai: 'th', tibetan: 'bo',
  turkish: 'tr', turkmen: 'tk', ukrainian: 'uk', urdu: 'ur', uzbek: 'uz', vietnamese: 'vi', welsh: 'cy',
  yiddish: 'yi', yoruba: 'yo',
};

/** A code for what a Whisper-compatible server said: a name, or already a code. */
export function languageCode(reported: unknown): string | null {
  if (typeof reported !== 'string' || !reported.trim()) return null;
  const v = reported.trim().toLowerCase();
  if (WHISPER_LANGUAGE_CODES[v]) return WHISPER_LANGUAGE_CODES[v];
  return /^[a-z]{2,3}(-[a-z0-9]{2,8})*$/.test(v) ? v.split('-')[0] : null;
}
