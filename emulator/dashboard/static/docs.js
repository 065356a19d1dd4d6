// Swagger UI over this emulator's own OpenAPI document; "try it" calls go to this server.
"use strict";
window.ui = SwaggerUIBundle({
  url: `${document.documentElement.dataset.base || ""}/openapi.json`, // /w/{id} in a workspace
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  tryItOutEnabled: false,
});
