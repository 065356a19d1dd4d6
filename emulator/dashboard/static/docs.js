// Swagger UI over this emulator's own OpenAPI document; "try it" calls go to this server.
"use strict";
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  tryItOutEnabled: false,
});
