"""Word lists the fixture generator draws realistic names, places and texts from."""

from __future__ import annotations

FIRST_NAMES = [
    "Aisha", "Alejandro", "Amara", "Anders", "Ana", "Arjun", "Beatriz", "Benjamin", "Chen",
    "Chloé", "Daniel", "Dmitri", "Elena", "Emeka", "Emma", "Fatima", "François", "Gabriel",
    "Grace", "Hannah", "Hiroshi", "Ibrahim", "Ingrid", "Isabel", "Jakob", "James", "Javier",
    "Jiwoo", "José", "Julia", "Kai", "Kavya", "Kwame", "Laura", "Lars", "Leila", "Liam",
    "Lucía", "Malik", "Marco", "Maria", "Mateo", "Mei", "Mohammed", "Nadia", "Naomi", "Nikhil",
    "Noah", "Olivia", "Omar", "Pedro", "Priya", "Rafael", "Renée", "Rohan", "Sakura", "Samuel",
    "Sara", "Sofia", "Søren", "Tariq", "Thomas", "Valentina", "Wei", "Yara", "Yusuf", "Zoë",
    "Zanele", "Ethan", "Ava", "Lucas", "Mia", "Oliver", "Charlotte", "Felix", "Amélie",
]

LAST_NAMES = [
    "Adeyemi", "Andersson", "Bauer", "Becker", "Brown", "Castro", "Chen", "Cohen", "Costa",
    "Dubois", "Díaz", "Eriksen", "Fernández", "Fischer", "García", "Gonzalez", "Gupta", "Haddad",
    "Hansen", "Hernández", "Ito", "Jensen", "Johnson", "Kim", "Kowalski", "Kumar", "Larsen",
    "Lee", "Lefèvre", "Li", "López", "Martin", "Mensah", "Meyer", "Moreau", "Müller", "Nakamura",
    "Nguyen", "Novak", "Okafor", "Olsen", "Park", "Patel", "Pereira", "Petrov", "Rossi",
    "Santos", "Schmidt", "Schneider", "Shah", "Silva", "Singh", "Smith", "Suzuki", "Tanaka",
    "Taylor", "Thompson", "Wagner", "Walker", "Wang", "Weber", "Williams", "Wilson", "Yamamoto",
    "Yilmaz", "Zhang", "Østergaard", "Núñez", "O'Brien", "Abara", "Rahman", "Ivanova",
]

COMPANY_FIRST = [
    "Acme", "Apex", "Aurora", "Azure", "Beacon", "Birch", "Blue", "Bright", "Cedar", "Clear",
    "Cloud", "Cobalt", "Copper", "Coral", "Crest", "Crimson", "Delta", "Echo", "Ember", "Evergreen",
    "Falcon", "Fern", "Flint", "Golden", "Granite", "Harbor", "Helix", "Horizon", "Indigo", "Iron",
    "Juniper", "Keystone", "Lumen", "Maple", "Meridian", "Nimbus", "North", "Nova", "Oak", "Onyx",
    "Orbit", "Pine", "Pioneer", "Prism", "Quantum", "Quartz", "Radiant", "River", "Sage", "Silver",
    "Solar", "Spruce", "Stellar", "Summit", "Swift", "Terra", "Tidal", "True", "Vertex", "Willow",
]

COMPANY_SECOND = [
    "Analytics", "Bio", "Bridge", "Byte", "Cart", "Cast", "Code", "Core", "Data", "Desk", "Dock",
    "Flow", "Forge", "Frame", "Fund", "Gate", "Grid", "Health", "Hub", "Labs", "Leaf", "Ledger",
    "Lens", "Line", "Link", "Logic", "Loop", "Mark", "Mesh", "Metrics", "Mind", "Path", "Pay",
    "Peak", "Point", "Pulse", "Scale", "Scope", "Shift", "Signal", "Sense", "Soft", "Spark",
    "Stack", "Star", "Stream", "Sync", "Systems", "Tech", "Trail", "Ware", "Wave", "Works",
    "Yard",
]

COMPANY_SUFFIX = ["Inc.", "Ltd", "GmbH", "SAS", "LLC", "Group", "AB", "B.V.", "Co.", "S.L."]

TLDS = ["com", "io", "co", "ai", "net", "tech", "app", "dev"]

INDUSTRIES = [
    "Software", "Fintech", "Healthcare", "E-commerce", "Logistics", "Manufacturing", "Education",
    "Marketing", "Cybersecurity", "Real Estate", "Energy", "Biotech", "Media", "Consulting",
    "Retail", "Insurance", "Telecommunications", "Travel",
]

INDUSTRY_BLURB = {
    "Software": "builds collaboration software for distributed teams",
    "Fintech": "offers payment and treasury tools for growing businesses",
    "Healthcare": "connects clinics and patients with digital care pathways",
    "E-commerce": "runs an online marketplace for independent brands",
    "Logistics": "optimises last-mile delivery for retailers",
    "Manufacturing": "makes precision components for industrial machinery",
    "Education": "provides online courses and learning analytics",
    "Marketing": "helps B2B teams plan and measure campaigns",
    "Cybersecurity": "protects cloud workloads from intrusion and data loss",
    "Real Estate": "manages commercial property portfolios",
    "Energy": "develops solar and storage projects",
    "Biotech": "researches protein therapeutics",
    "Media": "produces podcasts and video for brands",
    "Consulting": "advises mid-market companies on operations",
    "Retail": "operates specialty stores and an online shop",
    "Insurance": "sells usage-based insurance to small businesses",
    "Telecommunications": "provides business connectivity and VoIP",
    "Travel": "books corporate travel and events",
}

# (country, ISO code, phone prefix, cities)
PLACES = [
    ("United States", "US", "+1", ["New York", "San Francisco", "Austin", "Boston", "Chicago", "Seattle"]),
    ("United Kingdom", "GB", "+44", ["London", "Manchester", "Edinburgh", "Bristol"]),
    ("Germany", "DE", "+49", ["Berlin", "München", "Hamburg", "Köln"]),
    ("France", "FR", "+33", ["Paris", "Lyon", "Toulouse", "Nantes"]),
    ("Spain", "ES", "+34", ["Madrid", "Barcelona", "Valencia", "Málaga"]),
    ("Netherlands", "NL", "+31", ["Amsterdam", "Rotterdam", "Utrecht"]),
    ("Sweden", "SE", "+46", ["Stockholm", "Göteborg", "Malmö"]),
    ("Denmark", "DK", "+45", ["København", "Aarhus"]),
    ("India", "IN", "+91", ["Bengaluru", "Mumbai", "Pune", "Hyderabad"]),
    ("Japan", "JP", "+81", ["Tokyo", "Osaka", "Fukuoka"]),
    ("Brazil", "BR", "+55", ["São Paulo", "Rio de Janeiro", "Curitiba"]),
    ("Canada", "CA", "+1", ["Toronto", "Montréal", "Vancouver"]),
    ("Australia", "AU", "+61", ["Sydney", "Melbourne", "Brisbane"]),
    ("Nigeria", "NG", "+234", ["Lagos", "Abuja"]),
    ("Singapore", "SG", "+65", ["Singapore"]),
]

# country -> street names ("" for any other country)
STREETS = {
    "": ["Main Street", "Market Street", "Park Avenue", "Station Road", "Harbour Road"],
    "United States": ["Main Street", "Market Street", "Park Avenue", "Broadway", "Elm Street"],
    "United Kingdom": ["High Street", "Station Road", "King Street", "Church Lane"],
    "Germany": ["Hauptstraße", "Bahnhofstraße", "Gartenweg", "Schillerstraße"],
    "France": ["Rue de Rivoli", "Avenue Victor Hugo", "Rue de la République"],
    "Spain": ["Calle Mayor", "Gran Vía", "Avenida de la Constitución"],
    "Netherlands": ["Keizersgracht", "Kalverstraat", "Stationsweg"],
    "Sweden": ["Drottninggatan", "Storgatan", "Kungsgatan"],
    "Denmark": ["Strøget", "Vesterbrogade", "Nørregade"],
    "Brazil": ["Avenida Paulista", "Rua Augusta", "Rua da Consolação"],
}

JOB_TITLES = [
    "Chief Executive Officer", "Chief Technology Officer", "Chief Revenue Officer", "VP of Sales",
    "VP of Marketing", "VP of Engineering", "Head of Growth", "Head of Operations",
    "Head of Partnerships", "Director of Sales", "Director of Marketing", "Director of Product",
    "Engineering Manager", "Sales Manager", "Account Executive", "Senior Account Executive",
    "Business Development Representative", "Sales Development Representative",
    "Marketing Manager", "Product Manager", "Customer Success Manager", "Operations Manager",
    "Data Scientist", "Software Engineer", "Founder", "Co-Founder", "Procurement Lead",
    "Finance Director", "Talent Acquisition Lead", "RevOps Manager",
]

EMPLOYEE_RANGES = [
    ("1-10", 1, 10), ("11-50", 11, 50), ("51-200", 51, 200), ("201-500", 201, 500),
    ("501-1000", 501, 1000), ("1001-5000", 1001, 5000), ("5001-10000", 5001, 10000),
]

REVENUE_RANGES = ["<$1M", "$1M-$10M", "$10M-$50M", "$50M-$100M", "$100M-$500M", "$500M+"]

EMAIL_STATUSES = ["VALID", "VALID", "VALID", "RISKY", "INVALID", "UNVERIFIED"]

LEAD_SOURCES = ["Webinar", "Trade show", "Inbound", "Referral", "Cold outreach", "Partner"]

CAMPAIGN_NAMES = [
    "Q1 SaaS Founders", "Fintech Decision Makers", "Healthcare IT Leaders", "EMEA Expansion",
    "Webinar Follow-up", "Re-engage Lost Deals", "Series A Startups", "Enterprise Security",
    "Retail Ops Leaders", "Partner Recruitment", "Developer Tools Launch", "APAC Pilot",
]

EMAIL_SUBJECTS = [
    "Quick question, {first}", "Idea for {company}", "{company} + our team?",
    "Following up", "Worth a chat, {first}?", "A case study you might like",
]

MESSAGE_TEXTS = [
    "Hi {first}, I came across your profile and thought we should connect.",
    "Hi {first}, thanks for connecting! How is the team at {company} handling outreach today?",
    "Hi {first}, we help teams like {company} book more meetings. Open to a 15-minute call?",
    "Hi {first}, just bumping this up in case it got buried. Happy to share a short demo.",
    "Hi {first}, last note from me: if timing is off, no worries at all.",
]

REPLY_TEXTS = [
    "Thanks for reaching out, happy to chat next week.",
    "Not interested right now, maybe next quarter.",
    "Can you send more details by email?",
    "Please talk to our head of operations instead.",
    "Sounds interesting. What does pricing look like?",
]

TASK_SUBJECTS = [
    "Call {first} about the demo", "Send a personalised video to {first}",
    "Check {company}'s latest funding news", "Follow up with {first} by phone",
]
