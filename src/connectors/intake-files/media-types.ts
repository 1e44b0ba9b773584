/** Media types of the file extensions a print shop's intake meets; anything else is `application/octet-stream`. */
const BY_EXTENSION: Readonly<Record<string, string>> = {
  pdf: 'application/pdf', ps: 'application/postscript', eps: 'application/postscript', pcl: 'application/vnd.hp-pcl',
  prn: 'application/vnd.hp-pcl', afp: 'application/vnd.ibm.modcap', txt: 'text/plain', csv: 'text/csv', rli: 'application/rli',
  xml: 'application/xml', json: 'application/json', html: 'text/html', htm: 'text/html', png: 'image/png', jpg: 'image/jpeg',
  jpeg: 'image/jpeg', gif: 'image/gif', tif: 'image/tiff', tiff: 'image/tiff', bmp: 'image/bmp', svg: 'image/svg+xml',
  zip: 'application/zip', doc: 'application/msword', docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xls: 'application/vnd.ms-excel', xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  odt: 'application/vnd.oasis.opendocument.text', rtf: 'application/rtf',
};

/** The media type of a file by its extension (case-insensitive). */
export function mediaTypeOfName(name: string): string {
  const dot = name.lastIndexOf('.');
  return (dot > 0 && BY_EXTENSION[name.slice(dot + 1).toLowerCase()]) || 'application/octet-stream';
}
